// The AI SDK adapter against a live console: the console decides the tool's approval, and the
// tool runs with the person's values, or is refused with their reason.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { generateText, type ModelMessage } from "ai";
import { z } from "zod";

import { consoleTool, hasApprovalRequests, resolveApprovals } from "../src/ai-sdk.js";
import { ALREADY_DONE } from "../src/confirm.js";
import { TRANSFER, withTransferConsole } from "./live.js";
import { SAID, scriptedModel } from "./scripted.js";

const setup = withTransferConsole({ before, after });

function transferTools(sent: Array<Record<string, unknown>>) {
  return {
    send_transfer: consoleTool({
      description: "Send money to an account.",
      inputSchema: z.object({ recipient_account: z.string(), amount: z.number() }),
      execute: async (input, { receipt }) => {
        assert.ok(receipt.split(".").length === 3, "the function gets the receipt");
        sent.push(input);
        return `sent ${input.amount} EUR to ${input.recipient_account}`;
      },
      taskClass: "payments.transfer",
      principal: "alice",
      console: setup.client,
    }),
  };
}

async function run(callId: string, answer: () => Promise<void>) {
  const sent: Array<Record<string, unknown>> = [];
  const tools = transferTools(sent);
  const model = scriptedModel("send_transfer", TRANSFER, callId);
  const messages: ModelMessage[] = [{ role: "user", content: "Pay Bob 120 EUR" }];
  const first = await generateText({ model, tools, messages });
  assert.ok(hasApprovalRequests(first.content), "the plan blocks: the call waits for approval");
  assert.deepEqual(sent, []);
  const answering = answer();
  const approvals = await resolveApprovals(first.content, tools, { timeoutMs: 30_000 });
  await answering;
  messages.push(...first.response.messages, { role: "tool", content: approvals });
  const done = await generateText({ model, tools, messages });
  return { sent, done, messages, tools, model };
}

test("a transfer waits for alice and runs with her edited amount, once", async () => {
  const { sent, done, messages, tools, model } = await run("call_edit", async () => {
    await setup.alice.answer("confirm", {}, "recipient_account");
    await setup.alice.answer("edit", { value: "99.5" }, "amount");
  });
  assert.deepEqual(sent, [{ recipient_account: TRANSFER.recipient_account, amount: 99.5 }]);
  assert.ok(done.text.startsWith(`${SAID}sent 99.5 EUR to ${TRANSFER.recipient_account}`));
  assert.match(done.text, /amount: 120 → 99\.5/);
  // The same approval replayed: the receipt is spent, nothing is sent again.
  const again = await generateText({ model, tools, messages });
  assert.equal(again.text, SAID + ALREADY_DONE);
  assert.equal(sent.length, 1);
});

test("a rejected transfer is refused with alice's reason and never runs", async () => {
  const { sent, done } = await run("call_reject", async () => {
    await setup.alice.answer("reject", { reason: "not this account" });
  });
  assert.deepEqual(sent, []);
  assert.match(done.text, /not run: .*Their reason: not this account/);
});
