// OpenAI Agents JS: the transfer waits for alice in the console; the RunState is kept as text
// meanwhile (as a server would keep it between requests), then resumed.
//
//   CONSOLE_API_KEY=... npm run build && node dist/examples/openai-agents-transfer.js
//
// Offline: the model is a scripted Model (the SDK's own interface): it calls send_transfer once,
// then repeats what the tool said. Swap in a real model ("gpt-5") to try it live.
import { Agent, type Model, type ModelRequest, type ModelResponse, RunState, run, Usage } from "@openai/agents";
import { z } from "zod";

import { consoleTool, resolveInterruptions } from "../src/openai-agents.js";

const scripted: Model = {
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const items = Array.isArray(request.input) ? request.input : [];
    const result = items.find((i) => (i as { type?: string }).type === "function_call_result") as
      | { output: string | { text?: string } }
      | undefined;
    if (result) {
      const text = typeof result.output === "string" ? result.output : (result.output.text ?? "");
      return {
        usage: new Usage(),
        output: [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text }] }],
      };
    }
    const args = JSON.stringify({ recipient_account: "DE89 3704 0044 0532 0130 00", amount: 120 });
    return {
      usage: new Usage(),
      output: [{ type: "function_call", callId: `call_${Date.now()}`, name: "send_transfer", arguments: args, status: "completed" }],
    };
  },
  async *getStreamedResponse() {
    throw new Error("not streamed in this example");
  },
};

const sendTransfer = consoleTool({
  name: "send_transfer",
  description: "Send money to an account.",
  parameters: z.object({ recipient_account: z.string(), amount: z.number() }),
  execute: async (input: { recipient_account: string; amount: number }) =>
    `sent ${input.amount} EUR to ${input.recipient_account}`,
  taskClass: "payments.transfer",
  principal: "alice",
});
const agent = new Agent({ name: "payments", instructions: "Send transfers.", tools: [sendTransfer], model: scripted });

let result = await run(agent, "Pay Bob 120 EUR rent");
let kept = result.interruptions.length > 0 ? result.state.toString() : null;
while (kept !== null) {
  console.log("alice answers in the console; waiting for her");
  const state = await resolveInterruptions(await RunState.fromString(agent, kept), { timeoutMs: 600_000 });
  const resumed = await run(agent, state);
  kept = resumed.interruptions.length > 0 ? resumed.state.toString() : null;
  if (kept === null) console.log(resumed.finalOutput);
}
if (result.interruptions.length === 0) console.log(result.finalOutput);
