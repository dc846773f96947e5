// The OpenAI Agents JS adapter against a live console: interruptions resolved by the person's
// answer, the RunState carried across a serialisation, the tool run with the edited values.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Agent, RunState, run } from "@openai/agents";
import { z } from "zod";

import { ALREADY_DONE } from "../src/confirm.js";
import { consoleTool, resolveInterruptions } from "../src/openai-agents.js";
import { TRANSFER, withTransferConsole } from "./live.js";
import { SAID, ScriptedModel } from "./scripted-agents.js";

const setup = withTransferConsole({ before, after });

function agent(callId: string, sent: Array<Record<string, unknown>>) {
  const sendTransfer = consoleTool({
    name: "send_transfer",
    description: "Send money to an account.",
    parameters: z.object({ recipient_account: z.string(), amount: z.number() }),
    execute: async (input: { recipient_account: string; amount: number }) => {
      sent.push(input);
      return `sent ${input.amount} EUR to ${input.recipient_account}`;
    },
    taskClass: "payments.transfer",
    principal: "alice",
    console: setup.client,
  });
  return new Agent({
    name: "payments",
    instructions: "Send the transfer the user asks for.",
    tools: [sendTransfer],
    model: new ScriptedModel("send_transfer", TRANSFER, callId),
  });
}

test("a transfer waits for alice, resumes from a stored state, runs with her amount once", async () => {
  const sent: Array<Record<string, unknown>> = [];
  const payments = agent("call_edit", sent);
  const first = await run(payments, "Pay Bob 120 EUR");
  assert.equal(first.interruptions.length, 1, "the plan blocks: the call waits for approval");
  const stored = first.state.toString(); // as another process would keep it
  const answering = (async () => {
    await setup.alice.answer("confirm", {}, "recipient_account");
    await setup.alice.answer("edit", { value: "99.5" }, "amount");
  })();
  const restored = await RunState.fromString(payments, stored);
  const state = await resolveInterruptions(restored, { timeoutMs: 30_000 });
  await answering;
  const approvedState = state.toString();
  const done = await run(payments, state);
  assert.deepEqual(sent, [{ recipient_account: TRANSFER.recipient_account, amount: 99.5 }]);
  assert.ok(String(done.finalOutput).startsWith(`${SAID}sent 99.5 EUR to ${TRANSFER.recipient_account}`));
  assert.match(String(done.finalOutput), /amount: 120 → 99\.5/);
  // The approved state resumed a second time: the receipt is spent, nothing is sent again.
  const again = await run(payments, await RunState.fromString(payments, approvedState));
  assert.equal(again.finalOutput, SAID + ALREADY_DONE);
  assert.equal(sent.length, 1);
});

test("a rejected transfer is refused with alice's reason and never runs", async () => {
  const sent: Array<Record<string, unknown>> = [];
  const payments = agent("call_reject", sent);
  const first = await run(payments, "Pay Bob 120 EUR");
  const answering = setup.alice.answer("reject", { reason: "not this account" });
  const state = await resolveInterruptions(first.state, { timeoutMs: 30_000 });
  await answering;
  const done = await run(payments, state);
  assert.deepEqual(sent, []);
  assert.match(String(done.finalOutput), /Their reason: not this account/);
});
