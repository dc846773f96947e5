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

  // Set once the page has started to leave (a link, a form post such as Sign out): a
  // navigation of its own would cut that one short. Cleared if the page stays after all (an
  // answer that was a download, or no page): a page that has gone runs no timers.
  var leaving = false;
  window.addEventListener("beforeunload", function () {
    leaving = true;
    window.setTimeout(function () {
      leaving = false;
    }, 10000);
  });
  window.addEventListener("pageshow", function () {
    leaving = false;
  });

  // Go to the sign-in form, to come back here after it; not while the page is already on its
  // way somewhere (signing out ends the session, and the page's own poll sees that first).
  // Answers whether it went.
  function toSignIn() {
    if (leaving) {
      return false;
    }
    window.location.assign("/accounts/login/?next=" + encodeURIComponent(window.location.pathname));
    return true;
  }

  // A signed-out session answers a poll or a card post with the sign-in page: go there
  // instead of swapping a whole page into a card.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    if (xhr.responseURL && xhr.responseURL.indexOf("/accounts/login/") !== -1) {
      event.detail.shouldSwap = false;
      toSignIn();
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

  // Anti-fatigue: an irreversible card's buttons arrive marked aria-disabled and become
  // available after the delay the server put in data-enable-after-ms (a fresh card after a
  // swap starts over). Not `disabled`: a disabled button leaves the tab order, so a fast Tab
  // would pass it by; this one keeps its place, is announced as not yet available (its
  // aria-describedby note), and a press before the delay is over is ignored.
  function armDelayedButtons(root) {
    var buttons = Array.prototype.slice.call(root.querySelectorAll("[data-enable-after-ms]"));
    if (root.matches && root.matches("[data-enable-after-ms]")) {
      buttons.push(root);
    }
    buttons.forEach(function (button) {
      var delay = parseInt(button.getAttribute("data-enable-after-ms"), 10);
      window.setTimeout(function () {
        if (button.closest("[data-live-stale]") !== null) {
          return; // a card that changed elsewhere while being typed in stays disabled
        }
        button.setAttribute("data-delay-over", "");
        button.removeAttribute("aria-disabled");
        button.removeAttribute("aria-describedby");
        button.disabled = !actsDone(button);
        var card = button.closest("[data-live-key]");
        var waiting = card && card.querySelector("[data-enable-after-ms]:not([data-delay-over])");
        var note = card && card.querySelector("[data-wait-note]");
        if (note && !waiting) {
          note.remove();
        }
      }, isNaN(delay) ? 0 : delay);
    });
  }

  function stillWaiting(button) {
    return button !== null && button.getAttribute && button.getAttribute("aria-disabled") === "true";
  }

  // A press of a button that is still waiting does nothing: a click, Enter or Space on it, or
  // Enter in a field of its form (the browser's implicit submission clicks the form's first
  // button).
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button");
    if (stillWaiting(button)) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);

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

  // --- Attention -------------------------------------------------------------------------
  // A Confirm marked data-needs-acts enables only once every changed detail of its card is
  // ticked and, under raised friction, as many characters are typed as the value's tail has
  // (whether they are the right ones is the server's to say), and its delay is over.
  function actsDone(button) {
    if (!button.hasAttribute("data-needs-acts") || button.form === null) {
      return true;
    }
    var form = button.form;
    var unticked = form.querySelectorAll("input[name=acknowledged]:not(:checked)").length;
    var tail = form.querySelector("input[name=typed_tail]");
    var typed = tail === null || tail.value.trim().length >= parseInt(tail.getAttribute("data-tail-length"), 10);
    return unticked === 0 && typed;
  }

  function updateActs(form) {
    form.querySelectorAll("button[data-needs-acts]").forEach(function (button) {
      if (button.closest("[data-live-stale]") !== null) {
        return;
      }
      button.disabled = !actsDone(button); // (the delay is aria-disabled's, above)
    });
  }

  // Enter follows intent: once the value differs from the one on record, "Use this value
  // instead" is the primary button and Enter presses it (where a change needs no second
  // entry; where it does, Enter moves to that entry instead, below); an unchanged value keeps
  // Confirm.
  // (Compared with the value on record, not with what the input first showed: a refused edit
  // comes back with the person's value in it.)
  function differsFrom(form, onRecord) {
    var fields = form.querySelectorAll("[name=value]");
    return Array.prototype.some.call(fields, function (field) {
      if (field.type === "radio") {
        return field.checked && field.value.trim() !== onRecord;
      }
      return field.value.trim() !== onRecord;
    });
  }

  function valueChanged(form) {
    var confirm = form.querySelector("button[name=action][value=confirm][data-on-record]");
    if (confirm === null) {
      return false;
    }
    return differsFrom(form, confirm.getAttribute("data-on-record").trim());
  }

  // A change of an irreversible value is typed twice: its second field (data-repeat holds the
  // value on record) shows once the value differs from it. Without this script it is always
  // there; the server refuses a change without an equal second entry either way.
  function repeatOf(form) {
    return form.querySelector("[data-repeat]");
  }

  function repeatNeeded(form) {
    var repeat = repeatOf(form);
    return repeat !== null && differsFrom(form, repeat.getAttribute("data-repeat").trim());
  }

  function showRepeat(form) {
    var repeat = repeatOf(form);
    if (repeat !== null) {
      var again = repeat.querySelector("[name=value_confirmation]");
      // Kept in view while it holds something (a refused answer, a value changed back).
      repeat.hidden = !repeatNeeded(form) && (again === null || again.value === "");
    }
  }

  // The button that sends a typed value: "Use this value instead" or "Answer".
  function sendButton(form) {
    return form.querySelector("button[name=action][value=edit], button[name=action][value=answer]");
  }

  function followIntent(form) {
    var confirm = form.querySelector("button[name=action][value=confirm]");
    var edit = form.querySelector("button[name=action][value=edit]");
    if (confirm === null || edit === null) {
      return;
    }
    var changed = valueChanged(form);
    confirm.classList.toggle("primary", !changed);
    edit.classList.toggle("primary", changed);
  }

  function onCardInput(event) {
    var form = event.target.form;
    if (!form || !form.classList.contains("answer")) {
      return;
    }
    if (event.target.name === "acknowledged" || event.target.name === "typed_tail") {
      updateActs(form);
    } else if (event.target.name === "value") {
      followIntent(form);
      showRepeat(form);
    }
  }
  document.addEventListener("input", onCardInput);
  document.addEventListener("change", onCardInput);

  document.addEventListener("keydown", function (event) {
    var field = event.target;
    if (event.key !== "Enter" || event.isComposing || !field.form || field.tagName !== "INPUT") {
      return;
    }
    // Enter never sends a change of an irreversible value by itself: in the value it moves
    // to the second field, in the second field to the button that sends both.
    if (field.name === "value_confirmation" && field.closest("[data-repeat]") !== null) {
      event.preventDefault();
      var send = sendButton(field.form);
      if (send !== null) {
        send.focus();
      }
      return;
    }
    if (field.name !== "value") {
      return;
    }
    if (repeatNeeded(field.form)) {
      event.preventDefault();
      showRepeat(field.form);
      repeatOf(field.form).querySelector("[name=value_confirmation]").focus();
      return;
    }
    var edit = field.form.querySelector("button[name=action][value=edit]");
    if (edit === null || !valueChanged(field.form)) {
      return; // unchanged: Enter is the form's own (Confirm, once it may be pressed)
    }
    event.preventDefault();
    if (!edit.disabled) {
      edit.click();
    }
  });

  function init(root) {
    rememberSources(root);
    armDelayedButtons(root);
    var forms = Array.prototype.slice.call(root.querySelectorAll("form.answer"));
    if (root.matches && root.matches("form.answer")) {
      forms.push(root);
    }
    forms.forEach(function (form) {
      followIntent(form);
      showRepeat(form);
      updateActs(form);
    });
    if (root !== document.body) {
      focusSwapped(root);
    }
  }


  // --- Live pages ------------------------------------------------------------------------
  // A page with a [data-live-url] marker (the instance view, the inbox rows) asks it for the
  // next change since the version it shows; the server answers the fresh fragment as soon as
  // there is one, or 204 after its wait, and we ask again. A card the person is typing in is
  // kept as typed: if it changed elsewhere, its buttons are disabled and it says so.
  //
  // Every swap carries its version (`Live-Version`, a number that only grows): the page keeps
  // the highest it applied, drops a live answer not newer than that, and a response to the
  // person's own request older than that. So a live answer read just before the person's own
  // answer was recorded, arriving after that answer's response, changes nothing.
  //
  // A fresh fragment that arrives while a pointer is pressed waits until it is released: the
  // swap moves the cards it keeps, and a button moved between press and release loses its
  // click (the browser sends it to what stayed in the page). The marker says so meanwhile
  // (`data-live-held`).
  var inFlight = 0; // the person's own htmx requests under way
  var pollAfterRequests = false;
  var shown = {}; // live target id -> the highest version applied
  var pressed = false;
  var held = null; // a fresh fragment's delivery, waiting for the pointer's release

  document.addEventListener("pointerdown", function (event) {
    pressed = event.button === 0; // the button that clicks (a touch, a pen's tip)
  }, true);
  function released() {
    pressed = false;
    if (held !== null) {
      var deliver = held;
      held = null;
      // After the click this release makes (its request, if any, counts as under way then).
      window.setTimeout(function () {
        try {
          deliver();
        } catch (error) {
          livePoll(3000); // as a failed answer: the page keeps asking
        }
      }, 0);
    }
  }
  document.addEventListener("pointerup", released, true);
  document.addEventListener("pointercancel", released, true);
  document.addEventListener("contextmenu", released, true); // its release may never come
  window.addEventListener("blur", released);

  function versionNumber(text) {
    var number = /^[0-9]{1,19}$/.test(text || "") ? parseInt(text, 10) : NaN;
    return isNaN(number) ? -1 : number;
  }

  function liveMarker() {
    return document.querySelector("[data-live-url]");
  }

  function shownVersion(marker) {
    var target = marker.getAttribute("data-live-target");
    return Math.max(shown[target] === undefined ? -1 : shown[target], versionNumber(marker.getAttribute("data-live-version")));
  }

  document.addEventListener("htmx:configRequest", function (event) {
    var marker = liveMarker();
    if (marker !== null) {
      event.detail.headers["Live-Since"] = String(Math.max(shownVersion(marker), 0));
    }
  });
  document.addEventListener("htmx:beforeRequest", function () { inFlight++; });
  document.addEventListener("htmx:afterRequest", function () {
    inFlight = Math.max(inFlight - 1, 0);
    if (inFlight === 0 && pollAfterRequests) {
      pollAfterRequests = false;
      livePoll(0);
    }
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    var marker = liveMarker();
    var version = versionNumber(event.detail.xhr.getResponseHeader("Live-Version"));
    if (marker === null || version < 0 || !event.detail.shouldSwap) {
      return;
    }
    if (version < shownVersion(marker)) {
      event.detail.shouldSwap = false; // the page already shows something newer
      return;
    }
    shown[marker.getAttribute("data-live-target")] = version;
  });

  // Nothing is sent from a card marked changed, however it is submitted, nor by a button that
  // is still waiting out its delay.
  document.addEventListener("submit", function (event) {
    if ((event.target.closest && event.target.closest("[data-live-stale]") !== null) || stillWaiting(event.submitter || null)) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);
  document.addEventListener("htmx:confirm", function (event) {
    if (event.target.closest && event.target.closest("[data-live-stale]") !== null) {
      event.preventDefault();
    }
  });

  function isEdited(field) {
    if (field.type === "hidden" || field.type === "submit" || field.type === "button") {
      return false;
    }
    if (field === document.activeElement) {
      return true;
    }
    if (field.type === "checkbox" || field.type === "radio") {
      return field.checked !== field.defaultChecked;
    }
    if (field.tagName === "SELECT") {
      return Array.prototype.some.call(field.options, function (o) { return o.selected !== o.defaultSelected; });
    }
    return field.value !== field.defaultValue;
  }

  function markStale(card, fresh) {
    card.setAttribute("data-live-stale", "");
    card.liveFresh = fresh; // null: it is no longer on the page at all
    card.querySelectorAll("button").forEach(function (button) {
      if (!button.hasAttribute("data-live-refresh")) {
        button.disabled = true;
        button.removeAttribute("data-enable-after-ms");
      }
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

  document.addEventListener("click", function (event) {
    var show = event.target.closest && event.target.closest("[data-live-refresh]");
    if (!show) {
      return;
    }
    var card = show.closest("[data-live-stale]");
    if (card.liveFresh) {
      rememberSources(card.liveFresh);
      card.replaceWith(card.liveFresh);
      armDelayedButtons(card.liveFresh);
      card.liveFresh.querySelectorAll("form.answer").forEach(showRepeat);
      window.htmx.process(card.liveFresh);
      card.liveFresh.setAttribute("tabindex", "-1");
      card.liveFresh.focus();
    } else {
      card.remove();
    }
  });

  // A live fragment re-renders every card, most of them as they were. A card whose fresh
  // rendering is the one it arrived with stays the very element the person sees: its buttons
  // do not go back to disabled for the reading delay, nothing moves, and a click on its way
  // lands on it. (Compared as the server wrote them, without the per-response CSRF token.)
  var sources = new WeakMap(); // card element -> its HTML as it arrived

  function sourceOf(card) {
    var copy = card.cloneNode(true);
    copy.querySelectorAll("input[name=csrfmiddlewaretoken]").forEach(function (field) {
      field.removeAttribute("value");
    });
    [copy].concat(Array.prototype.slice.call(copy.querySelectorAll("[class*=htmx-]"))).forEach(function (element) {
      Array.prototype.slice.call(element.classList).forEach(function (name) {
        if (name.indexOf("htmx-") === 0) {
          element.classList.remove(name); // htmx's own marks while it swaps and settles
        }
      });
    });
    return copy.outerHTML;
  }

  function rememberSources(root) {
    var cards = Array.prototype.slice.call(root.querySelectorAll("[data-live-key]"));
    if (root.matches && root.matches("[data-live-key]")) {
      cards.push(root);
    }
    cards.forEach(function (card) {
      if (!sources.has(card)) { // a card kept from before keeps the source it arrived with
        sources.set(card, sourceOf(card));
      }
    });
  }

  // The element inside `root` with this id (getElementById is a document's, not an element's).
  function byId(root, id) {
    return root.querySelector("#" + CSS.escape(id));
  }

  function unchanged(old, next) {
    var stale = old.hasAttribute("data-live-stale") || old.querySelector("[data-live-stale]") !== null;
    return next !== null && !stale && sources.get(old) === sourceOf(next);
  }

  // Cards to keep as they are: one being typed in (stale when it changed), one showing the
  // answer to the person's own request (a refused veto's message) while nothing changed, and
  // one the fresh fragment renders exactly as it arrived.
  function cardsToKeep(current, fresh) {
    var keep = {};
    current.querySelectorAll("input, textarea, select").forEach(function (field) {
      var card = field.closest("[data-live-key]");
      if (card !== null && isEdited(field)) {
        keep[card.id] = "edited";
      }
    });
    current.querySelectorAll("[data-live-key]").forEach(function (card) {
      if (!keep[card.id] && (byId(card, card.id + "-message") || card.hasAttribute("data-live-stale"))) {
        keep[card.id] = card.hasAttribute("data-live-stale") ? "edited" : "message";
      }
      if (!keep[card.id] && unchanged(card, byId(fresh, card.id))) {
        keep[card.id] = "unchanged";
      }
    });
    return keep;
  }

  function applyLive(targetId, html) {
    var current = document.getElementById(targetId);
    var fresh = new DOMParser().parseFromString(html, "text/html").getElementById(targetId);
    if (current === null || fresh === null) {
      return;
    }
    fresh = document.adoptNode(fresh);
    var focused = document.activeElement;
    var selection = focused && "selectionStart" in focused ? [focused.selectionStart, focused.selectionEnd] : null;
    var keep = cardsToKeep(current, fresh);
    var kept = [];
    // Outer cards first (a veto's question sits inside its assumption line): a card kept whole
    // carries the cards inside it, and one of those that changed is marked so.
    Array.prototype.forEach.call(current.querySelectorAll("[data-live-key]"), function (old) {
      var id = old.id;
      if (!keep[id] || kept.some(function (card) { return card.contains(old); })) {
        return;
      }
      var next = byId(fresh, id);
      var same = next !== null && next.getAttribute("data-live-key") === old.getAttribute("data-live-key") && !old.hasAttribute("data-live-stale");
      if (keep[id] === "message" && !same) {
        return; // its message answered a question that is gone: the fresh card replaces it
      }
      if (!same) {
        markStale(old, next);
      }
      old.querySelectorAll("[data-live-key]:not([data-live-stale])").forEach(function (inner) {
        var freshInner = next === null ? null : byId(next, inner.id);
        if (freshInner === null || freshInner.getAttribute("data-live-key") !== inner.getAttribute("data-live-key")) {
          markStale(inner, freshInner);
        }
      });
      kept.push(old);
      if (next !== null) {
        next.replaceWith(old);
      } else {
        (fresh.querySelector(".cards") || fresh).appendChild(old);
      }
    });
    fresh.querySelectorAll("[data-enable-after-ms]").forEach(function (button) {
      if (!kept.some(function (card) { return card.contains(button); })) {
        armDelayedButtons(button);
      }
    });
    rememberSources(fresh);
    current.replaceWith(fresh);
    fresh.querySelectorAll("form.answer").forEach(showRepeat);
    if (window.htmx) {
      window.htmx.process(fresh);
    }
    // The keyboard focus stays where the person had it: on the same element, or, when the
    // fresh fragment replaced it (a card the person's own answer had just focused), on its
    // fresh copy (same id).
    if (focused && focused !== document.body && document.activeElement !== focused) {
      var again = document.contains(focused) ? focused : (focused.id ? document.getElementById(focused.id) : null);
      if (again !== null) {
        if (again.tabIndex < 0 && !again.hasAttribute("tabindex")) {
          again.setAttribute("tabindex", "-1"); // a card: focusable by script, not by Tab
        }
        again.focus({ preventScroll: true });
        if (selection !== null && again.tagName === focused.tagName) {
          try { again.setSelectionRange(selection[0], selection[1]); } catch (ignored) { /* not a text field */ }
        }
      }
    }
  }

  // A live fragment may say what the page's title is now (the inbox: how many wait).
  function retitle() {
    var marker = liveMarker();
    var title = marker && marker.getAttribute("data-live-title");
    if (title) {
      document.title = title;
    }
  }

  function livePoll(delay) {
    window.setTimeout(function () {
      var marker = liveMarker();
      if (marker === null || !window.fetch) {
        return;
      }
      var url = marker.getAttribute("data-live-url");
      url += (url.indexOf("?") === -1 ? "?" : "&") + "since=" + Math.max(shownVersion(marker), 0);
      url += "&seen=" + encodeURIComponent(marker.getAttribute("data-live-digest") || "");
      var target = marker.getAttribute("data-live-target");
      fetch(url, { credentials: "same-origin", cache: "no-store", headers: { "HX-Request": "true" } })
        .then(function (response) {
          if (response.redirected && response.url.indexOf("/accounts/login/") !== -1) {
            if (!toSignIn()) {
              livePoll(3000); // (if the page stays after all, it goes there then)
            }
            return null;
          }
          if (response.status === 204) {
            livePoll(0);
            return null;
          }
          if (response.status >= 400 && response.status < 500) {
            return null; // gone or no longer theirs: stop asking (the page says so on reload)
          }
          if (!response.ok) {
            throw new Error("live " + response.status);
          }
          var version = versionNumber(response.headers.get("Live-Version"));
          return response.text().then(function (html) {
            function deliver() {
              var current = liveMarker();
              if (pressed) {
                held = deliver;
                if (current !== null) {
                  current.setAttribute("data-live-held", "");
                }
                return;
              }
              if (current !== null) {
                current.removeAttribute("data-live-held");
              }
              if (inFlight > 0) {
                pollAfterRequests = true; // the person's own request is under way: ask afresh after it
                return;
              }
              if (current !== null && version > shownVersion(current)) {
                applyLive(target, html);
                shown[target] = version;
                retitle();
              } // else older than (or as old as) what the page shows: dropped
              livePoll(100); // (never a tight loop, whatever the server answers)
            }
            deliver();
          });
        })
        .catch(function () {
          livePoll(3000); // the server is away: try again in a while
        });
    }, delay);
  }

  document.addEventListener("DOMContentLoaded", function () {
    livePoll(0);
  });

  if (window.htmx) {
    window.htmx.onLoad(init);
  } else {
    document.addEventListener("DOMContentLoaded", function () {
      init(document.body);
    });
  }
})();
