// The console's page script: failures said where they happen, and the focus after a swap. No
// inline handlers anywhere: behaviour hangs off data attributes. Which answers htmx swaps is
// configured in base.html (a refusal the page handles is swapped like a success). The answer
// cards' own behaviour is cards.js; live pages and the session's end are live.js.
(function () {
  "use strict";

  // Without this script the page still works (plain form posts); CSS hides what needs it.
  document.documentElement.classList.remove("no-js");

  var DEBUG = document.documentElement.hasAttribute("data-debug");
  var Cards = window.ConsoleCards;
  var Live = window.ConsoleLive;

  // An answer htmx does not swap (a 404, a server error) or none at all: say so where the
  // request came from, so nothing looks recorded. The live pages' own asks stay quiet.
  function showFailure(event, text) {
    var source = event.detail.elt;
    if (!source || source.hasAttribute("data-live-url")) {
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

  // DEBUG only: a server error's traceback as text at the top of the page (Django's debug page
  // needs inline scripts and styles, which the CSP forbids).
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
    box.append(heading, pre);
    document.getElementById("main").prepend(box);
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

  // What an answer swapped in asks to be focused (the card with its message, the question a
  // veto opened, the outcome) takes the focus and comes into view, so the next Tab starts there.
  function focusSwapped(root) {
    var target = root.matches && root.matches("[data-focus]") ? root : root.querySelector("[data-focus]");
    if (target !== null) {
      target.focus({ preventScroll: true });
      target.scrollIntoView({ block: target.classList.contains("banner") ? "start" : "nearest" });
    }
  }

  // Everything htmx puts in the page (the page itself first). A live swap prepares only what it
  // changed, and moves nobody's focus.
  window.htmx.onLoad(function (root) {
    var live = Live.swapping();
    Cards.prepare(root, live ? Live.kept : null);
    if (!live && root !== document.body) {
      focusSwapped(root);
    }
  });
})();
