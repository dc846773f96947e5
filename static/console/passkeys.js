// Passkeys: register one on the account page, sign in with one, and sign an action
// on its review page. The server gives WebAuthn's options as JSON; the browser's own parsers
// turn them into what navigator.credentials takes, and the credential goes back as JSON.
(function () {
  "use strict";

  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (e) {
      return "";
    }
  }

  async function post(url, body) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify(body || {}),
    });
    let data = {};
    try {
      data = await response.json();
    } catch (e) {
      data = { detail: "The console answered with an error (" + response.status + ")." };
    }
    if (!response.ok) {
      throw new Error(data.detail || "Refused (" + response.status + ").");
    }
    return data;
  }

  function supported() {
    return window.PublicKeyCredential && window.isSecureContext &&
      typeof PublicKeyCredential.parseRequestOptionsFromJSON === "function";
  }

  function showError(root, message) {
    const box = root.querySelector("[data-passkey-error]") ||
      (root.parentElement && root.parentElement.querySelector("[data-passkey-error]"));
    if (box) {
      box.textContent = message;
      box.hidden = false;
    }
  }

  // Browsers refuse passkeys on an IP address ("This is an invalid domain"): say which address
  // to open instead. The server says the same when asked for options.
  function onIpAddress() {
    const host = window.location.hostname;
    return /^[0-9.]+$/.test(host) || host.indexOf(":") !== -1 || host.charAt(0) === "[";
  }

  function hostNameMessage() {
    const host = window.location.hostname.replace(/^\[|\]$/g, "");
    const loopback = /^127\./.test(host) || host === "::1";
    const instead = loopback
      ? window.location.protocol + "//localhost" + (window.location.port ? ":" + window.location.port : "") + "/"
      : "the console's host name (its address with a name, not numbers)";
    return "Passkeys do not work on an IP address (" + host + "): browsers allow them only on a host name. Open " + instead + " instead, sign in there, and try again.";
  }

  function why(error) {
    if (error && error.name === "NotAllowedError") {
      return "The passkey was not used (cancelled, or it timed out). Try again.";
    }
    if (error && error.name === "SecurityError") {
      return onIpAddress()
        ? hostNameMessage()
        : "The browser refused a passkey for this address: open the console by the address it is set up for (CONSOLE_WEBAUTHN_RP_ID), then try again.";
    }
    return (error && error.message) || String(error);
  }

  function unsupportedMessage() {
    if (onIpAddress()) return hostNameMessage();
    return "This browser cannot use passkeys here: open the console over https (or http://localhost) in a browser with passkey support.";
  }

  function onRegister(form) {
    form.addEventListener("submit", async function (event) {
      event.preventDefault();
      if (!supported() || onIpAddress()) return showError(form, unsupportedMessage());
      const button = form.querySelector("button[type=submit]");
      button.disabled = true;
      try {
        const name = form.querySelector("[name=name]").value;
        const started = await post(form.dataset.optionsUrl);
        const options = PublicKeyCredential.parseCreationOptionsFromJSON(started.options);
        const credential = await navigator.credentials.create({ publicKey: options });
        const done = await post(form.dataset.url, { name: name, credential: credential.toJSON() });
        window.location.assign(done.redirect);
      } catch (error) {
        showError(form, why(error));
        button.disabled = false;
      }
    });
  }

  async function getAssertion(started) {
    const options = PublicKeyCredential.parseRequestOptionsFromJSON(started.options);
    const credential = await navigator.credentials.get({ publicKey: options });
    return credential.toJSON();
  }

  // Sign-in and signing share one flow: start an attempt (fresh options, so a fresh challenge),
  // let the device assert, post the assertion with what `body` adds, then go where told.
  function onAssert(button, body) {
    button.addEventListener("click", async function () {
      if (!supported() || onIpAddress()) {
        return showError(button.parentElement, unsupportedMessage());
      }
      button.disabled = true;
      try {
        const started = await post(button.dataset.optionsUrl);
        const credential = await getAssertion(started);
        const done = await post(button.dataset.url, body(started, credential));
        window.location.assign(done.redirect);
      } catch (error) {
        showError(button.parentElement, why(error));
        button.disabled = false;
      }
    });
  }

  function onSignIn(button) {
    onAssert(button, function (started, credential) {
      return { credential: credential, next: button.dataset.next };
    });
  }

  function onSign(button) {
    // A fresh attempt each time: a new nonce, so a new challenge.
    onAssert(button, function (started, credential) {
      return { attempt: started.attempt, credential: credential };
    });
  }

  function start() {
    document.querySelectorAll("[data-passkey-register]").forEach(onRegister);
    document.querySelectorAll("[data-passkey-sign-in]").forEach(onSignIn);
    document.querySelectorAll("[data-passkey-sign]").forEach(onSign);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
