// The client against a live console: open, plan, long-poll, the person's edit, the receipt
// verified and redeemed once, a rejection's reason, typed errors.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Console } from "../src/client.js";
import {
  BadRequest,
  ConsoleUnavailable,
  NotFound,
  ReceiptDigestMismatch,
  ReceiptRedeemed,
  WaitTimeout,
} from "../src/errors.js";
import { TRANSFER, withTransferConsole } from "./live.js";

const setup = withTransferConsole({ before, after });

test("a transfer waits for alice and binds her edited amount; the receipt is used once", async () => {
  const pending = await setup.client.resolve("payments.transfer", "alice", TRANSFER, { wait: false });
  assert.equal(pending.status, "awaiting_user");
  assert.equal(pending.url, `${setup.live.url}/instances/${pending.instanceId}/`);
  const answering = (async () => {
    await setup.alice.answer("confirm", {}, "recipient_account");
    await setup.alice.answer("edit", { value: "99.5" }, "amount");
  })();
  const done = await setup.client.wait(pending.instanceId, { timeoutMs: 30_000 });
  await answering;
  assert.equal(done.status, "ready");
  assert.deepEqual(done.bindings, { recipient_account: TRANSFER.recipient_account, amount: 99.5 });
  assert.ok(done.receipt);
  const receipt = await setup.client.verifyReceipt(done.receipt, { bindings: done.bindings ?? {} });
  assert.equal(receipt.instanceId, done.instanceId);
  assert.equal(receipt.bound.amount?.via, "console");
  await assert.rejects(
    setup.client.verifyReceipt(done.receipt, { bindings: TRANSFER }),
    ReceiptDigestMismatch,
  );
  const redeemed = await setup.client.redeem(done.receipt, receipt.bindingsDigest);
  assert.equal(redeemed.jti, receipt.jti);
  await assert.rejects(setup.client.redeem(done.receipt), ReceiptRedeemed);
});

test("a rejection comes back with alice's reason", async () => {
  const pending = await setup.client.resolve("payments.transfer", "alice", TRANSFER, { wait: false });
  await setup.alice.answer("reject", { reason: "not this account" });
  const done = await setup.client.wait(pending.instanceId, { timeoutMs: 30_000 });
  assert.equal(done.status, "cancelled");
  assert.ok(done.rejected);
  assert.equal(done.reason, "not this account");
});

test("the same Idempotency-Key finds the same instance; the lists page through them", async () => {
  const first = await setup.client.openInstance("payments.transfer", "alice", { idempotencyKey: "k-1" });
  const again = await setup.client.openInstance("payments.transfer", "alice", { idempotencyKey: "k-1" });
  assert.equal(again.id, first.id);
  const page = await setup.client.listInstances({ status: "open", limit: 10 });
  assert.ok(page.results.some((i) => i.id === first.id));
  const classes = await setup.client.listTaskClasses();
  assert.deepEqual(
    classes.results.map((c) => c.key),
    ["payments.transfer"],
  );
  await setup.client.cancel(first.id, "not needed");
});

test("a wait that runs out, and refusals, are typed errors", async () => {
  const pending = await setup.client.resolve("payments.transfer", "alice", TRANSFER, { wait: false });
  await assert.rejects(setup.client.wait(pending.instanceId, { timeoutMs: 1_000 }), WaitTimeout);
  await setup.client.cancel(pending.instanceId);
  await assert.rejects(setup.client.openInstance("no.such.class", "alice"), NotFound);
  await assert.rejects(
    setup.client.resolve("payments.transfer", "alice", { nonsense: 1 }, { wait: false }),
    BadRequest,
  );
  const away = new Console({ baseUrl: "http://127.0.0.1:9", apiKey: setup.live.key, timeoutMs: 2_000 });
  await assert.rejects(away.get(pending.instanceId), (error: unknown) => {
    assert.ok(error instanceof ConsoleUnavailable);
    assert.match(error.message, /127\.0\.0\.1:9/);
    return true;
  });
});
