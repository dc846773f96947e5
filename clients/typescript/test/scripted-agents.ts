// A scripted model for OpenAI Agents JS (a Model of its own interface): calls one tool once,
// then says what the tool answered.
import { type Model, type ModelRequest, type ModelResponse, Usage } from "@openai/agents";

export const SAID = "The tool said: ";

export class ScriptedModel implements Model {
  constructor(
    private readonly toolName: string,
    private readonly input: Record<string, unknown>,
    private readonly callId = "call_1",
  ) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const items = Array.isArray(request.input) ? request.input : [];
    for (const item of items) {
      const result = item as { type?: string; callId?: string; output?: unknown };
      if (result.type === "function_call_result" && result.callId === this.callId) {
        const output = result.output as string | { text?: string };
        const text = typeof output === "string" ? output : (output.text ?? JSON.stringify(output));
        return {
          usage: new Usage(),
          output: [
            {
              type: "message",
              role: "assistant",
              status: "completed",
              content: [{ type: "output_text", text: SAID + text }],
            },
          ],
        };
      }
    }
    return {
      usage: new Usage(),
      output: [
        {
          type: "function_call",
          callId: this.callId,
          name: this.toolName,
          arguments: JSON.stringify(this.input),
          status: "completed",
        },
      ],
    };
  }

  // biome-ignore lint: the tests never stream
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("the scripted model does not stream");
  }
}
