// Standard Webhooks signatures, as the console signs its deliveries.
import assert from "node:assert/strict";
import { createHmac, randomBytes } from "node:crypto";
import { test } from "node:test";

import { WebhookVerificationError } from "../src/errors.js";
import { verifyWebhook } from "../src/webhooks.js";

const KEY = randomBytes(24);
const SECRET = `whsec_${KEY.toString("base64")}`;
const BODY = JSON.stringify({ type: "instance.ready", data: { instance: "i-1" } });

function signed(body: string, at = Math.floor(Date.now() / 1000), id = "msg_1") {
  const signature = createHmac("sha256", KEY).update(`${id}.${at}.${body}`).digest("base64");
  return {
    "webhook-id": id,
    "webhook-timestamp": String(at),
    "webhook-signature": `v1,${"A".repeat(44)} v1,${signature}`,
  };
}

test("a signed delivery verifies into its event", () => {
  const event = verifyWebhook(BODY, signed(BODY), SECRET);
  assert.equal(event.type, "instance.ready");
  assert.deepEqual(event.data, { instance: "i-1" });
  assert.equal(event.id, "msg_1");
  const headers = new Headers(signed(BODY));
  assert.equal(verifyWebhook(BODY, headers, SECRET).type, "instance.ready");
});

test("a changed body, an old timestamp, a missing header or another secret are refused", () => {
  assert.throws(() => verifyWebhook(BODY.replace("i-1", "i-2"), signed(BODY), SECRET), WebhookVerificationError);
  const old = Math.floor(Date.now() / 1000) - 600;
  assert.throws(() => verifyWebhook(BODY, signed(BODY, old), SECRET), /too old/);
  const { "webhook-id": _, ...noId } = signed(BODY);
  assert.throws(() => verifyWebhook(BODY, noId, SECRET), /missing webhook-id/);
  const other = `whsec_${randomBytes(24).toString("base64")}`;
  assert.throws(() => verifyWebhook(BODY, signed(BODY), other), /no signature matches/);
});
