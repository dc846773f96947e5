// The console's only script. No inline handlers anywhere: behaviour hangs off data attributes.
(function () {
  "use strict";

  // htmx 2 does not swap 4xx answers by default. A 400 (bad input) or 409 (stale version)
  // carries the card with its message in place, so swap those too.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var status = event.detail.xhr.status;
    if (status === 400 || status === 409 || status === 422) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();
