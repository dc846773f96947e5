// Vercel AI SDK: the transfer waits for alice in the console, then runs with what she confirmed.
//
//   CONSOLE_API_KEY=... npm run build && node dist/examples/ai-sdk-transfer.js
//
// Offline: the model is the AI SDK's own MockLanguageModelV3, scripted to call send_transfer
// once and then repeat what the tool said. Swap in a real model to try it live.
import { generateText, type ModelMessage } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";

import { consoleTool, hasApprovalRequests, resolveApprovals } from "../src/ai-sdk.js";

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
const model = new MockLanguageModelV3({
  doGenerate: async ({ prompt }) => {
    const result = prompt.flatMap((m) => (m.role === "tool" ? m.content : [])).find((p) => p.type === "tool-result");
    if (result && result.type === "tool-result") {
      const output = result.output;
      const text = output.type === "text" ? output.value : output.type === "execution-denied" ? `not sent: ${output.reason}` : "";
      return { content: [{ type: "text", text }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
    }
    const input = JSON.stringify({ recipient_account: "DE89 3704 0044 0532 0130 00", amount: 120 });
    return {
      content: [{ type: "tool-call", toolCallId: `call_${Date.now()}`, toolName: "send_transfer", input }],
      finishReason: { unified: "tool-calls", raw: "tool_calls" },
      usage,
      warnings: [],
    };
  },
});

const tools = {
  send_transfer: consoleTool({
    description: "Send money to an account.",
    inputSchema: z.object({ recipient_account: z.string(), amount: z.number() }),
    execute: async ({ recipient_account, amount }) => `sent ${amount} EUR to ${recipient_account}`,
    taskClass: "payments.transfer",
    principal: "alice",
  }),
};

const messages: ModelMessage[] = [{ role: "user", content: "Pay Bob 120 EUR rent" }];
let result = await generateText({ model, tools, messages });
while (hasApprovalRequests(result.content)) {
  console.log("alice answers in the console; waiting for her");
  const approvals = await resolveApprovals(result.content, tools, { timeoutMs: 600_000 });
  messages.push(...result.response.messages, { role: "tool", content: approvals });
  result = await generateText({ model, tools, messages });
}
console.log(result.text);
