// Live pages and the session's end: the instance page and the inbox follow changes made
// elsewhere without a reload, and a page whose session ended goes to the sign-in form.
(function () {
  "use strict";

  // A page restored from the back/forward cache may show a time before an answer: reload it.
  window.addEventListener("pageshow", function (event) {
    leaving = false;
    if (event.persisted) {
      window.location.reload();
    }
  });

  // Set once the page has started to leave (a link, Sign out): a navigation of its own would cut
  // that one short. Cleared if the page stays after all (a download).
  var leaving = false;
  window.addEventListener("beforeunload", function () {
    leaving = true;
    window.setTimeout(function () { leaving = false; }, 10000);
  });

  // To the sign-in form, to come back here after it, unless the page is already on its way.
  function toSignIn() {
    if (!leaving) {
      window.location.assign("/accounts/login/?next=" + encodeURIComponent(window.location.pathname));
    }
    return !leaving;
  }

  function signedOut(xhr) {
    return Boolean(xhr.responseURL) && xhr.responseURL.indexOf("/accounts/login/") !== -1;
  }

  // A page's marker ([data-live-url]: the instance view's, the inbox rows) is an htmx element
  // whose `live-poll` event asks for the next change since the version it shows (a long-poll:
  // the fresh fragment as soon as there is one, or 204 after the server's wait), morphed into
  // the page with idiomorph. Every swap carries its version (`Live-Version`, a number that only
  // grows): a live answer not newer than what the page shows is dropped, and so is a response to
  // the person's own request older than that. A live answer that comes while the person's own
  // request is under way is dropped too, and asked for again after it; one that comes while the
  // pointer is pressed waits for the release (a button moved between press and release loses
  // its click), the marker saying so meanwhile (`data-live-held`).
  var inFlight = 0; // the person's own requests under way
  var askAfterRequests = false;
  var pressed = false;
  var held = false;
  var asking = false; // a live ask is under way (one at a time, whatever htmx re-processes)
  var morphing = false; // a live swap is being applied (synchronous: `settle:0ms`)
  var kept = new Set(); // cards the live swap under way leaves as they are
  var sources = new WeakMap(); // card -> its HTML as the server wrote it

  function marker() {
    return document.querySelector("[data-live-url]");
  }

  function ask(delay) {
    window.setTimeout(function () {
      var live = marker();
      if (live !== null && !held && !asking) {
        window.htmx.trigger(live, "live-poll");
      }
    }, delay);
  }

  function versionNumber(text) {
    return /^[0-9]{1,19}$/.test(text || "") ? parseInt(text, 10) : -1;
  }

  var applied = -1; // the highest version a swap brought
  function shownVersion(live) {
    return Math.max(applied, versionNumber(live.getAttribute("data-live-version")));
  }

  // (An htmx event's `elt` is where it was dispatched; the element that asked is the request's.)
  function isLive(event) {
    var asker = (event.detail.requestConfig || event.detail).elt;
    return Boolean(asker) && asker.hasAttribute("data-live-url");
  }

  document.addEventListener("pointerdown", function (event) {
    pressed = event.button === 0; // the button that clicks (a touch, a pen's tip)
  }, true);
  function released() {
    pressed = false;
    if (held) {
      held = false;
      var live = marker();
      if (live !== null) {
        live.removeAttribute("data-live-held");
      }
      ask(0); // after the click this release makes (its request, if any, is under way then)
    }
  }
  ["pointerup", "pointercancel", "contextmenu"].forEach(function (name) {
    document.addEventListener(name, released, true); // (a context menu's release may never come)
  });
  window.addEventListener("blur", released);

  document.addEventListener("htmx:configRequest", function (event) {
    var live = marker();
    if (live === null) {
      return;
    }
    event.detail.headers["Live-Since"] = String(Math.max(shownVersion(live), 0));
    if (isLive(event)) {
      event.detail.parameters.since = Math.max(shownVersion(live), 0);
      event.detail.parameters.seen = live.getAttribute("data-live-digest") || "";
    }
  });
  document.addEventListener("htmx:beforeRequest", function (event) {
    asking = asking || isLive(event);
    inFlight += isLive(event) ? 0 : 1;
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var xhr = event.detail.xhr;
    if (!isLive(event)) {
      inFlight = Math.max(inFlight - 1, 0);
      if (inFlight === 0 && askAfterRequests) {
        askAfterRequests = false;
        ask(0);
      }
      return;
    }
    asking = morphing = false;
    if (signedOut(xhr)) {
      if (!toSignIn()) {
        ask(3000); // (if the page stays after all, it goes there then)
      }
    } else if (xhr.status >= 400 && xhr.status < 500) {
      return; // gone or no longer theirs: stop asking (the page says so on reload)
    } else if (!event.detail.successful) {
      ask(3000); // the server is away: try again in a while
    } else if (!held && !askAfterRequests) {
      // (Never a tight loop, whatever the server answers: one that did not wait says when.)
      ask(xhr.status === 204 ? 1000 * (parseInt(xhr.getResponseHeader("Retry-After"), 10) || 0) : 100);
    }
  });

  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    if (signedOut(xhr)) {
      event.detail.shouldSwap = false; // a signed-out session answered with the sign-in page
      if (!isLive(event)) {
        toSignIn();
      }
      return;
    }
    var live = marker();
    var version = versionNumber(xhr.getResponseHeader("Live-Version"));
    if (live === null || version < 0 || !event.detail.shouldSwap) {
      return;
    }
    if (isLive(event) && (pressed || inFlight > 0)) {
      event.detail.shouldSwap = false;
      held = pressed;
      askAfterRequests = !pressed;
      if (held) {
        live.setAttribute("data-live-held", "");
      }
    } else if (version < shownVersion(live) + (isLive(event) ? 1 : 0)) {
      event.detail.shouldSwap = false; // the page already shows this or something newer
    } else {
      applied = version;
      morphing = isLive(event);
      kept.clear();
    }
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (morphing) {
      morphing = false;
      var title = marker() && marker().getAttribute("data-live-title");
      document.title = title || document.title; // (the inbox: how many wait)
    }
  });

  // A card as the server wrote it: without the per-response CSRF token and htmx's own marks.
  function sourceOf(card) {
    var copy = card.cloneNode(true);
    copy.querySelectorAll("input[name=csrfmiddlewaretoken]").forEach(function (field) { field.removeAttribute("value"); });
    [copy].concat(Array.from(copy.querySelectorAll("[class*=htmx-]"))).forEach(function (element) {
      Array.from(element.classList).forEach(function (name) {
        if (name.indexOf("htmx-") === 0) { element.classList.remove(name); }
      });
    });
    return copy.outerHTML;
  }

  function rememberSources(root) {
    [root].concat(Array.from(root.querySelectorAll("[data-live-key]"))).forEach(function (card) {
      if (card.hasAttribute("data-live-key") && !sources.has(card)) {
        sources.set(card, sourceOf(card));
      }
    });
  }

  // Typed in by the person: a field of this card's own (not of a card inside it) that has the
  // focus or differs from what the server wrote.
  function edited(card) {
    return Array.from(card.querySelectorAll("input, textarea, select")).some(function (field) {
      if (field.closest("[data-live-key]") !== card || ["hidden", "submit", "button"].indexOf(field.type) !== -1) {
        return false;
      }
      if (field === document.activeElement) {
        return true;
      }
      if (field.type === "checkbox" || field.type === "radio") {
        return field.checked !== field.defaultChecked;
      }
      if (field.tagName === "SELECT") {
        return Array.from(field.options).some(function (o) { return o.selected !== o.defaultSelected; });
      }
      return field.value !== field.defaultValue;
    });
  }

  // A card typed in that changed elsewhere keeps what was typed, sends nothing and says so.
  function markStale(card, fresh) {
    card.setAttribute("data-live-stale", "");
    card.liveFresh = fresh; // null: it is no longer on the page at all
    card.querySelectorAll("button:not([data-live-refresh])").forEach(function (button) {
      button.disabled = true;
      button.removeAttribute("data-enable-after-ms");
    });
    if (card.querySelector(":scope > .live-stale") === null) {
      var note = document.createElement("p");
      note.className = "message message-409 live-stale";
      note.setAttribute("role", "alert");
      note.textContent = "This question changed or was answered elsewhere: review the fresh version. ";
      var show = document.createElement("button");
      show.type = "button";
      show.setAttribute("data-live-refresh", "");
      show.textContent = "Show the fresh version";
      note.appendChild(show);
      var head = card.querySelector(":scope > header");
      card.insertBefore(note, head ? head.nextSibling : card.firstChild);
    }
  }

  // How a live swap treats each card: one it renders exactly as it arrived stays the very element
  // the person sees (its buttons do not wait out the delay again, a click on its way lands); one
  // being typed in is kept as typed (marked when its question changed); one showing the answer
  // to the person's own request stays while its question is the same; the rest are morphed.
  window.Idiomorph.defaults.callbacks.beforeNodeMorphed = function (card, fresh) {
    if (!morphing || !(card instanceof Element) || !card.hasAttribute("data-live-key")) {
      return true;
    }
    var same = fresh.getAttribute("data-live-key") === card.getAttribute("data-live-key");
    if (card.hasAttribute("data-live-stale") || (edited(card) && !same)) {
      markStale(card, fresh.cloneNode(true));
    } else if (sources.get(card) !== sourceOf(fresh) && !edited(card) && !(same && card.querySelector("#" + CSS.escape(card.id + "-message")))) {
      return true;
    }
    // Kept whole, it carries the cards inside it (a veto's question): one that changed is marked.
    card.querySelectorAll("[data-live-key]:not([data-live-stale])").forEach(function (inner) {
      var next = fresh.querySelector("#" + CSS.escape(inner.id));
      if (next === null || next.getAttribute("data-live-key") !== inner.getAttribute("data-live-key")) {
        markStale(inner, next && next.cloneNode(true));
      }
    });
    kept.add(card);
    return false;
  };
  window.Idiomorph.defaults.callbacks.afterNodeMorphed = function (card, fresh) {
    if (morphing && card instanceof Element && card.hasAttribute("data-live-key")) {
      sources.set(card, sourceOf(fresh));
    }
  };
  window.Idiomorph.defaults.callbacks.beforeNodeRemoved = function (card) {
    if (morphing && card instanceof Element && card.hasAttribute("data-live-key") && (edited(card) || card.hasAttribute("data-live-stale"))) {
      markStale(card, null);
      return false;
    }
    return true;
  };
  // What the person's own answer asked to be focused (`data-focus`, and the `tabindex` that lets
  // it take the focus) stays so when its fresh copy is not marked, and so does a card that has
  // the focus: htmx gives that focus when the answer's swap settles, after its request ended, so
  // a live swap asked for at that end can land first, and would otherwise take the mark away.
  window.Idiomorph.defaults.callbacks.beforeAttributeUpdated = function (name, element, how) {
    if (!morphing || how !== "remove") {
      return true;
    }
    if (name === "data-focus") {
      return false;
    }
    return !(name === "tabindex" && (element === document.activeElement || element.hasAttribute("data-focus")));
  };

  // Nothing is sent from a card marked changed, however it is submitted.
  document.addEventListener("submit", function (event) {
    if (event.target.closest("[data-live-stale]") !== null) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);
  document.addEventListener("htmx:confirm", function (event) {
    if (event.target.closest("[data-live-stale]") !== null) {
      event.preventDefault();
    }
  });

  document.addEventListener("click", function (event) {
    var show = event.target.closest && event.target.closest("[data-live-refresh]");
    var card = show && show.closest("[data-live-stale]");
    if (card && card.liveFresh) {
      var fresh = card.liveFresh;
      card.replaceWith(fresh);
      window.htmx.process(fresh);
      rememberSources(fresh);
      window.ConsoleCards.prepare(fresh);
      fresh.setAttribute("tabindex", "-1");
      fresh.focus();
    } else if (card) {
      card.remove();
    }
  });

  window.htmx.onLoad(rememberSources);
  document.addEventListener("DOMContentLoaded", function () { ask(0); });
  // For console.js: is a live swap being applied, and which cards does it leave as they are.
  window.ConsoleLive = { swapping: function () { return morphing; }, kept: kept };
})();
