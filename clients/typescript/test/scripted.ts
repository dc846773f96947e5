// A scripted model for the AI SDK (its own MockLanguageModelV3): calls one tool once, then
// says what the tool answered (or why it was not run).
import { MockLanguageModelV3 } from "ai/test";

export const SAID = "The tool said: ";

const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

export function scriptedModel(toolName: string, input: Record<string, unknown>, toolCallId = "call_1") {
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      for (const message of prompt) {
        if (message.role !== "tool") continue;
        for (const part of message.content) {
          if (part.type !== "tool-result" || part.toolCallId !== toolCallId) continue;
          const output = part.output;
          const text =
            output.type === "text"
              ? output.value
              : output.type === "execution-denied"
                ? `not run: ${output.reason ?? ""}`
                : JSON.stringify("value" in output ? output.value : output);
          return {
            content: [{ type: "text", text: SAID + text }],
            finishReason: { unified: "stop", raw: "stop" },
            usage: USAGE,
            warnings: [],
          };
        }
      }
      return {
        content: [{ type: "tool-call", toolCallId, toolName, input: JSON.stringify(input) }],
        finishReason: { unified: "tool-calls", raw: "tool_calls" },
        usage: USAGE,
        warnings: [],
      };
    },
  });
}
