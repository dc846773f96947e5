// The console's only script. No inline handlers anywhere: behaviour hangs off data attributes.
// Which answers htmx swaps is configured in base.html (htmx-config responseHandling): a refusal
// the page handles (400, 403, 409, 422) is swapped into its card like a success.
(function () {
  "use strict";

  // Without this script the page still works (plain form posts); CSS hides what needs it.
  document.documentElement.classList.remove("no-js");

  var DEBUG = document.documentElement.hasAttribute("data-debug");

  // A page restored from the back/forward cache shows what it showed when it was left, which
  // may be before an answer: fetch it afresh (the server sends Cache-Control: no-store too).
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) {
      window.location.reload();
    }
  });

  // A signed-out session answers a poll or a card post with the sign-in page: go there
  // instead of swapping a whole page into a card.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    if (xhr.responseURL && xhr.responseURL.indexOf("/accounts/login/") !== -1) {
      event.detail.shouldSwap = false;
      window.location.assign(
        "/accounts/login/?next=" + encodeURIComponent(window.location.pathname)
      );
    }
  });

  // An answer htmx does not swap (a 404, a server error) or no answer at all: say so where the
  // request came from, so nothing looks as if it was recorded. Polls stay quiet.
  function showFailure(event, text) {
    var source = event.detail.elt;
    if (!source || (source.getAttribute("hx-trigger") || "").indexOf("every") === 0) {
      return;
    }
    var box = source.closest("article, .assumption, form, section") || document.getElementById("main");
    var note = box.querySelector(":scope > .request-failed");
    if (note === null) {
      note = document.createElement("p");
      note.className = "message message-error request-failed";
      note.setAttribute("role", "alert");
      box.insertBefore(note, box.firstChild);
    }
    note.textContent = text;
  }

  // DEBUG only: a server error's traceback, shown as text at the top of the page (Django's
  // debug page itself needs inline scripts and styles, which the CSP forbids).
  function showTraceback(xhr) {
    var parsed = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
    var area = parsed.getElementById("traceback_area");
    var title = parsed.querySelector("title");
    var box = document.createElement("section");
    box.className = "debug-error";
    box.setAttribute("role", "alert");
    var heading = document.createElement("h2");
    heading.textContent = "Server error " + xhr.status + (title ? ": " + title.textContent.trim() : "");
    var pre = document.createElement("pre");
    pre.textContent = area ? area.value || area.textContent : xhr.responseText;
    box.appendChild(heading);
    box.appendChild(pre);
    var main = document.getElementById("main");
    main.insertBefore(box, main.firstChild);
  }

  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    if (xhr.status >= 500) {
      showFailure(event, "Something went wrong on our side; your answer may not have been recorded. Reload the page to see where things stand.");
      if (DEBUG) {
        showTraceback(xhr);
      }
    } else if (xhr.status === 404) {
      showFailure(event, "This is no longer here. Reload the page to see where things stand.");
    } else {
      showFailure(event, "This could not be done (error " + xhr.status + "). Reload the page and try again.");
    }
  });

  document.addEventListener("htmx:sendError", function (event) {
    showFailure(event, "The server could not be reached, so nothing was recorded. Check your connection and try again.");
  });

  // Anti-fatigue: an irreversible card's buttons arrive disabled and enable after the delay
  // the server put in data-enable-after-ms (a fresh card after a swap starts over).
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

  // What an answer swapped in asks to be focused (the card with its message, the question a
  // veto opened, or the outcome when the action is finished) takes the keyboard focus and is
  // brought into view, so that it is read and the next Tab starts from it.
  function focusSwapped(root) {
    var target = root.matches && root.matches("[data-focus]") ? root : null;
    if (target === null && root !== document.body) {
      target = root.querySelector("[data-focus]");
    }
    if (target !== null) {
      target.focus({ preventScroll: true });
      target.scrollIntoView({ block: target.classList.contains("banner") ? "start" : "nearest" });
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
