// Tables that scroll sideways say so: each scrolling region (.table-scroll[role=region]) is
// marked data-scrolls while its table is wider than it, so the hint above it shows only then
// (console.css). Without this script the hint shows on every narrow screen instead.
(function () {
  "use strict";
  function mark() {
    document.querySelectorAll(".table-scroll[role=region]").forEach(function (region) {
      region.toggleAttribute("data-scrolls", region.scrollWidth > region.clientWidth + 1);
    });
  }
  document.addEventListener("DOMContentLoaded", mark);
  window.addEventListener("resize", mark);
  // A swapped fragment (htmx) may bring new tables.
  document.addEventListener("htmx:afterSettle", mark);
})();
