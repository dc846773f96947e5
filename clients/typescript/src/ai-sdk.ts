// Vercel AI SDK adapter: a tool whose approval the console decides.
//
//   const tools = { sendTransfer: consoleTool({ inputSchema, execute, taskClass, principal }) };
//   let result = await generateText({ model, tools, messages });
//   while (hasApprovalRequests(result.content)) {               // only when the plan blocks
//     messages.push(...result.response.messages,
//                   { role: "tool", content: await resolveApprovals(result.content, tools) });
//     result = await generateText({ model, tools, messages });   // runs with the confirmed values
//   }
import { type FlexibleSchema, type Tool, type ToolApprovalResponse, tool } from "ai";

import { Console } from "./client.js";
import {
  ALREADY_DONE,
  askedThePerson,
  type CallSpec,
  changesMessage,
  confirmCall,
  consoleOf,
  openCall,
  rejectionMessage,
} from "./confirm.js";
import { NotReady } from "./errors.js";

const SPEC = Symbol.for("confirmation-console.ai-sdk");
const FRAMEWORK = "ai-sdk";

export interface ConsoleToolOptions<INPUT extends Record<string, unknown>, OUTPUT> extends CallSpec {
  description?: string;
  inputSchema: FlexibleSchema<INPUT>;
  /** Runs with the values the person confirmed (their edits included), once. `receipt` is the
   * signed receipt, for a service that checks it again. */
  execute: (input: INPUT, context: { toolCallId: string; receipt: string }) => OUTPUT | Promise<OUTPUT>;
}

/** An AI SDK tool whose call the console plans: it needs approval exactly when the plan blocks,
 * and runs only on the console's confirmation, with the confirmed values, once. */
export function consoleTool<INPUT extends Record<string, unknown>, OUTPUT>(
  options: ConsoleToolOptions<INPUT, OUTPUT>,
): Tool<INPUT, OUTPUT | string> {
  const made = tool<INPUT, OUTPUT | string>({
    ...(options.description !== undefined ? { description: options.description } : {}),
    inputSchema: options.inputSchema,
    needsApproval: async (input: INPUT, { toolCallId }: { toolCallId: string }) => {
      const instance = await openCall(consoleOf(options), options, FRAMEWORK, toolCallId, input);
      return askedThePerson(instance);
    },
    execute: async (input: INPUT, { toolCallId }: { toolCallId: string }) => {
      const client = consoleOf(options);
      const instance = await openCall(client, options, FRAMEWORK, toolCallId, input);
      const confirmed = await confirmCall(client, instance, options.audience);
      if (confirmed.kind === "waiting") {
        throw new NotReady(`${toolCallId} was not confirmed in the console yet: resolve it with resolveApprovals()`);
      }
      if (confirmed.kind === "replayed") return ALREADY_DONE;
      if (confirmed.kind === "rejected") return confirmed.message;
      const output = await options.execute(confirmed.bindings as INPUT, { toolCallId, receipt: confirmed.receipt });
      const changes = changesMessage(input, confirmed.bindings);
      if (changes === null) return output;
      return (typeof output === "string" ? `${output}\n\n${changes}` : output) as OUTPUT | string;
    },
  } as never) as Tool<INPUT, OUTPUT | string>;
  Object.defineProperty(made, SPEC, { value: options, enumerable: false });
  return made;
}

interface ContentPart {
  type: string;
  approvalId?: string;
  toolCall?: { toolCallId: string; toolName: string; input: unknown };
}

/** Whether a step ended on approval requests. */
export function hasApprovalRequests(content: readonly ContentPart[]): boolean {
  return content.some((part) => part.type === "tool-approval-request");
}

/** Wait for the console on every approval request of a console tool; approve each confirmed
 * call, deny each rejected one with the person's reason. The responses go in a `tool` message
 * before the next `generateText`. Requests of other tools are left out. */
export async function resolveApprovals(
  content: readonly ContentPart[],
  tools: Record<string, unknown>,
  { timeoutMs }: { timeoutMs?: number } = {},
): Promise<ToolApprovalResponse[]> {
  const responses: ToolApprovalResponse[] = [];
  for (const part of content) {
    if (part.type !== "tool-approval-request" || !part.toolCall || !part.approvalId) continue;
    const spec = (tools[part.toolCall.toolName] as Record<symbol, CallSpec> | undefined)?.[SPEC];
    if (!spec) continue;
    const client = consoleOf(spec);
    const input = part.toolCall.input as Record<string, unknown>;
    const instance = await openCall(client, spec, FRAMEWORK, part.toolCall.toolCallId, input);
    const done = await client.wait(instance.id, timeoutMs === undefined ? {} : { timeoutMs });
    if (done.status === "ready") {
      responses.push({ type: "tool-approval-response", approvalId: part.approvalId, approved: true });
    } else {
      responses.push({
        type: "tool-approval-response",
        approvalId: part.approvalId,
        approved: false,
        reason: rejectionMessage(done.instance, client.baseUrl),
      });
    }
  }
  return responses;
}

export { Console };
