// OpenAI Agents JS adapter: a function tool whose approval the console decides.
//
//   const transfer = consoleTool({ name, parameters, execute, taskClass, principal });
//   let result = await run(agent, "Pay Bob 120 EUR");
//   while (result.interruptions.length > 0) {                  // only when the plan blocks
//     const state = await resolveInterruptions(result.state);  // waits for the person
//     result = await run(agent, state);                        // runs with the confirmed values
//   }
//
// The RunState serialises (`state.toString()`) and resumes in another process
// (`RunState.fromString(agent, text)`, then `resolveInterruptions`): the call finds its
// instance again by the call id and the digest of its arguments.
import { type RunState, tool } from "@openai/agents";
import type { z } from "zod";

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

const SPEC = Symbol.for("confirmation-console.openai-agents");
const FRAMEWORK = "openai-agents";

export interface ConsoleToolOptions<PARAMETERS extends z.ZodObject, OUTPUT> extends CallSpec {
  name: string;
  description: string;
  parameters: PARAMETERS;
  /** Runs with the values the person confirmed (their edits included), once. */
  execute: (
    input: z.infer<PARAMETERS>,
    context: { callId: string; receipt: string },
  ) => OUTPUT | Promise<OUTPUT>;
}

function callIdOf(details: { toolCall?: { callId?: string } } | undefined): string {
  const callId = details?.toolCall?.callId;
  if (!callId) throw new NotReady("the tool call has no call id");
  return callId;
}

/** A function tool whose call the console plans: it needs approval exactly when the plan
 * blocks, and runs only on the console's confirmation, with the confirmed values, once. */
export function consoleTool<PARAMETERS extends z.ZodObject, OUTPUT>(
  options: ConsoleToolOptions<PARAMETERS, OUTPUT>,
) {
  const made = tool({
    name: options.name,
    description: options.description,
    parameters: options.parameters as never,
    needsApproval: async (_context, input, callId) => {
      const asked = input as Record<string, unknown>;
      const instance = await openCall(consoleOf(options), options, FRAMEWORK, callId ?? "", asked);
      return askedThePerson(instance);
    },
    execute: async (input, _context, details) => {
      const callId = callIdOf(details);
      const asked = input as Record<string, unknown>;
      const client = consoleOf(options);
      const instance = await openCall(client, options, FRAMEWORK, callId, asked);
      const confirmed = await confirmCall(client, instance, options.audience);
      if (confirmed.kind === "waiting") {
        throw new NotReady(`${options.name} was not confirmed in the console yet: resolve it with resolveInterruptions()`);
      }
      if (confirmed.kind === "replayed") return ALREADY_DONE;
      if (confirmed.kind === "rejected") return confirmed.message;
      const output = await options.execute(confirmed.bindings as z.infer<PARAMETERS>, {
        callId,
        receipt: confirmed.receipt,
      });
      const changes = changesMessage(asked, confirmed.bindings);
      const text = typeof output === "string" ? output : JSON.stringify(output);
      return changes === null ? text : `${text}\n\n${changes}`;
    },
  });
  Object.defineProperty(made, SPEC, { value: options, enumerable: false });
  return made;
}

interface ApprovalItem {
  rawItem: { type?: string; callId?: string; name?: string; arguments?: string };
  agent: { tools?: unknown[] };
  toolName?: string;
}

/** Wait for the console on every interruption of a console tool; approve the confirmed
 * calls, reject the rejected ones with the person's reason. Returns the state to run on.
 * Interruptions of other tools are left as they are. */
export async function resolveInterruptions<S extends RunState<any, any>>(
  state: S,
  { timeoutMs }: { timeoutMs?: number } = {},
): Promise<S> {
  for (const item of state.getInterruptions() as unknown as ApprovalItem[]) {
    const name = item.toolName ?? item.rawItem.name;
    const found = (item.agent.tools ?? []).find((t) => (t as { name?: string }).name === name);
    const spec = (found as Record<symbol, CallSpec> | undefined)?.[SPEC];
    if (!spec || !item.rawItem.callId) continue;
    const client = consoleOf(spec);
    const input = JSON.parse(item.rawItem.arguments || "{}") as Record<string, unknown>;
    const instance = await openCall(client, spec, FRAMEWORK, item.rawItem.callId, input);
    const done = await client.wait(instance.id, timeoutMs === undefined ? {} : { timeoutMs });
    if (done.status === "ready") {
      state.approve(item as never);
    } else {
      state.reject(item as never, { message: rejectionMessage(done.instance, client.baseUrl) });
    }
  }
  return state;
}
