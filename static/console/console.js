// The console's only script. No inline handlers anywhere: behaviour hangs off data attributes.
(function () {
  "use strict";

  // Without this script the page still works (plain form posts); CSS hides what needs it.
  document.documentElement.classList.remove("no-js");

  // htmx 2 does not swap 4xx answers by default. A 400 (bad input) or 409 (stale version)
  // carries the card with its message in place, so swap those too.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    var status = xhr.status;
    if (status === 400 || status === 409 || status === 422) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
    // A signed-out session answers a poll or a card post with the sign-in page: go there
    // instead of swapping a whole page into a card.
    if (xhr.responseURL && xhr.responseURL.indexOf("/accounts/login/") !== -1) {
      event.detail.shouldSwap = false;
      window.location.assign(
        "/accounts/login/?next=" + encodeURIComponent(window.location.pathname)
      );
    }
  });

  // Anti-fatigue: an irreversible confirm button arrives disabled and enables after the
  // delay the server put in data-enable-after-ms (a fresh card after a swap starts over).
  function armDelayedButtons(root) {
    var buttons = Array.prototype.slice.call(root.querySelectorAll("[data-enable-after-ms]"));
    if (root.matches && root.matches("[data-enable-after-ms]")) {
      buttons.push(root);
    }
    buttons.forEach(function (button) {
      var delay = parseInt(button.getAttribute("data-enable-after-ms"), 10);
      window.setTimeout(function () {
        button.disabled = false;
      }, isNaN(delay) ? 0 : delay);
    });
  }

  // A card swapped in after an answer takes the keyboard focus, so that its message is read
  // and the next Tab starts from it rather than from the top of the page.
  function focusSwapped(root) {
    var target = root.matches && root.matches("[data-focus]") ? root : null;
    if (target === null && root !== document.body) {
      target = root.querySelector("[data-focus]");
    }
    if (target !== null) {
      target.focus();
    }
  }

  function init(root) {
    armDelayedButtons(root);
    if (root !== document.body) {
      focusSwapped(root);
    }
  }

  if (window.htmx) {
    window.htmx.onLoad(init);
  } else {
    document.addEventListener("DOMContentLoaded", function () {
      init(document.body);
    });
  }
})();
