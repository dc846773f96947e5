// verifyReceipt refuses what a receipt does not vouch for: checked with keys made here.
import assert from "node:assert/strict";
import { test } from "node:test";

import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";

import { bindingsDigest } from "../src/canonical.js";
import {
  ReceiptAudienceMismatch,
  ReceiptDigestMismatch,
  ReceiptExpired,
  ReceiptInvalid,
  ReceiptNotApprovedByPerson,
} from "../src/errors.js";
import { RECEIPT_TYPE, verifyReceipt } from "../src/receipts.js";

const BINDINGS = { recipient_account: "NL91 ABNA 0417 1643 00", amount: 120, memo: "rent" };

async function signer(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: "EdDSA" };
  const sign = (claims: Record<string, unknown> = {}, expiresIn = "1h") =>
    new SignJWT({
      instance: "11111111-2222-3333-4444-555555555555",
      task_class: "payments.transfer",
      decisions: ["send_transfer"],
      bindings_digest: bindingsDigest(BINDINGS),
      worlds_digest: null,
      bound: { amount: { route: "CONFIRM", rule: "R4", source: "tool", via: "console" } },
      vouched_by_runtime: [],
      canonicalization: "RFC8785",
      ...claims,
    })
      .setProtectedHeader({ alg: "EdDSA", kid, typ: RECEIPT_TYPE })
      .setSubject("alice")
      .setAudience("payments-service")
      .setIssuer("http://console.test")
      .setJti(crypto.randomUUID())
      .setIssuedAt()
      .setExpirationTime(expiresIn)
      .sign(privateKey);
  return { jwks: { keys: [jwk] }, sign };
}

test("a receipt verifies into its claims", async () => {
  const { jwks, sign } = await signer("key-1");
  const receipt = await verifyReceipt(await sign(), jwks, {
    bindings: { ...BINDINGS, amount: 120.0 },
    audience: "payments-service",
    issuer: "http://console.test",
  });
  assert.equal(receipt.principal, "alice");
  assert.equal(receipt.taskClass, "payments.transfer");
  assert.equal(receipt.bound.amount?.via, "console");
  assert.deepEqual(receipt.decisions, ["send_transfer"]);
});

test("a tampered digest, a wrong audience and an expired receipt are refused", async () => {
  const { jwks, sign } = await signer("key-1");
  const token = await sign();
  await assert.rejects(
    verifyReceipt(token, jwks, { bindings: { ...BINDINGS, amount: 1200 } }),
    ReceiptDigestMismatch,
  );
  await assert.rejects(
    verifyReceipt(await sign({ bindings_digest: "0".repeat(64) }), jwks, { bindings: BINDINGS }),
    ReceiptDigestMismatch,
  );
  await assert.rejects(verifyReceipt(token, jwks, { audience: "reporting" }), ReceiptAudienceMismatch);
  const expired = await sign({}, "1s");
  const later = new Date(Date.now() + 60_000);
  await assert.rejects(verifyReceipt(expired, jwks, { now: later }), ReceiptExpired);
});

test("a receipt only the runtime vouched for is refused unless told otherwise", async () => {
  const { jwks, sign } = await signer("key-1");
  const token = await sign({ vouched_by_runtime: ["amount"] });
  await assert.rejects(verifyReceipt(token, jwks), (error: unknown) => {
    assert.ok(error instanceof ReceiptNotApprovedByPerson);
    assert.deepEqual(error.slots, ["amount"]);
    return true;
  });
  const receipt = await verifyReceipt(token, jwks, { personRequired: false });
  assert.deepEqual(receipt.vouchedByRuntime, ["amount"]);
});

test("another key under the same kid, or no matching key, is refused", async () => {
  const honest = await signer("key-1");
  const forger = await signer("key-1");
  await assert.rejects(verifyReceipt(await forger.sign(), honest.jwks), ReceiptInvalid);
  const other = await signer("key-2");
  await assert.rejects(verifyReceipt(await other.sign(), honest.jwks), ReceiptInvalid);
  await assert.rejects(verifyReceipt("not.a.token", honest.jwks), ReceiptInvalid);
});
