// The answer cards: the reading delay before an irreversible value may be confirmed, the acts
// a raised friction asks for, Enter following intent, and the second entry of a changed
// irreversible value. Without this script every form still posts; the server checks all of it.
// console.js calls `ConsoleCards.prepare(root)` for every card it puts in the page.
(function () {
  "use strict";

  function within(root, selector) {
    var found = Array.prototype.slice.call(root.querySelectorAll(selector));
    return root.matches && root.matches(selector) ? found.concat([root]) : found;
  }

  // Anti-fatigue: an irreversible card's buttons arrive aria-disabled and become available after
  // the server's data-enable-after-ms. Not `disabled`: a disabled button leaves the tab order, so
  // a fast Tab would pass it by; this one keeps its place, says why (aria-describedby), and a
  // press before the delay is over is ignored.
  function armDelayedButtons(buttons) {
    buttons.forEach(function (button) {
      var delay = parseInt(button.getAttribute("data-enable-after-ms"), 10);
      window.setTimeout(function () {
        if (button.closest("[data-live-stale]") !== null || button.hasAttribute("data-delay-over")) {
          return; // a card that changed elsewhere while being typed in stays disabled
        }
        button.setAttribute("data-delay-over", "");
        button.removeAttribute("aria-disabled");
        button.removeAttribute("aria-describedby");
        button.disabled = !actsDone(button);
        var card = button.closest("[data-live-key]");
        var note = card && card.querySelector("[data-wait-note]");
        if (note && !card.querySelector("[data-enable-after-ms]:not([data-delay-over])")) {
          note.remove();
        }
      }, isNaN(delay) ? 0 : delay);
    });
  }

  function stillWaiting(button) {
    return button !== null && button.getAttribute && button.getAttribute("aria-disabled") === "true";
  }

  // A press of a button still waiting does nothing: a click, Enter or Space on it, or Enter in a
  // field of its form (implicit submission clicks the form's first button).
  document.addEventListener("click", function (event) {
    if (stillWaiting(event.target.closest && event.target.closest("button"))) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);
  document.addEventListener("submit", function (event) {
    if (stillWaiting(event.submitter || null)) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);

  // A Confirm marked data-needs-acts enables once every changed detail of its card is ticked
  // and, under raised friction, as many characters are typed as the value's tail has (whether
  // they are the right ones is the server's to say).
  function actsDone(button) {
    if (!button.hasAttribute("data-needs-acts") || button.form === null) {
      return true;
    }
    var form = button.form;
    var tail = form.querySelector("input[name=typed_tail]");
    var typed = tail === null || tail.value.trim().length >= parseInt(tail.getAttribute("data-tail-length"), 10);
    return form.querySelectorAll("input[name=acknowledged]:not(:checked)").length === 0 && typed;
  }

  function updateActs(form) {
    form.querySelectorAll("button[data-needs-acts]").forEach(function (button) {
      if (button.closest("[data-live-stale]") === null) {
        button.disabled = !actsDone(button); // (the delay is aria-disabled's, above)
      }
    });
  }

  // Does the typed value differ from the one on record? (Not from what the input first showed:
  // a refused edit comes back with the person's value in it.)
  function differsFrom(form, onRecord) {
    return Array.prototype.some.call(form.querySelectorAll("[name=value]"), function (field) {
      var value = field.value.trim();
      return field.type === "radio" ? field.checked && value !== onRecord : value !== onRecord;
    });
  }

  function valueChanged(form) {
    var confirm = form.querySelector("button[name=action][value=confirm][data-on-record]");
    return confirm !== null && differsFrom(form, confirm.getAttribute("data-on-record").trim());
  }

  // Enter follows intent: once the value differs from the one on record, "Use this value
  // instead" is the primary button; an unchanged value keeps Confirm.
  function followIntent(form) {
    var confirm = form.querySelector("button[name=action][value=confirm]");
    var edit = form.querySelector("button[name=action][value=edit]");
    if (confirm !== null && edit !== null) {
      var changed = valueChanged(form);
      confirm.classList.toggle("primary", !changed);
      edit.classList.toggle("primary", changed);
    }
  }

  // A change of an irreversible value is typed twice: the second field (data-repeat holds the
  // value on record) shows once the value differs. Without this script it is always there.
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
    var form = field.form;
    var send = form.querySelector("button[name=action][value=edit], button[name=action][value=answer]");
    // Enter never sends a change of an irreversible value by itself: in the value it moves to
    // the second field, in the second field to the button that sends both.
    if (field.name === "value_confirmation" && field.closest("[data-repeat]") !== null) {
      event.preventDefault();
      if (send !== null) {
        send.focus();
      }
    } else if (field.name === "value" && repeatNeeded(form)) {
      event.preventDefault();
      showRepeat(form);
      repeatOf(form).querySelector("[name=value_confirmation]").focus();
    } else if (field.name === "value" && valueChanged(form)) {
      var edit = form.querySelector("button[name=action][value=edit]");
      if (edit !== null) {
        event.preventDefault();
        if (!edit.disabled) {
          edit.click();
        }
      } // unchanged: Enter is the form's own (Confirm, once it may be pressed)
    }
  });

  window.ConsoleCards = {
    // Start the delays of the buttons in `root` that are still waiting and bring its answer
    // forms up to date with what they hold, leaving alone what is inside the cards `kept`.
    prepare: function (root, kept) {
      function free(element) {
        return !Array.from(kept || []).some(function (card) { return card.contains(element); });
      }
      armDelayedButtons(within(root, "[data-enable-after-ms]:not([data-delay-over])").filter(free));
      within(root, "form.answer").filter(free).forEach(function (form) {
        followIntent(form);
        showRepeat(form);
        updateActs(form);
      });
    },
  };
})();
