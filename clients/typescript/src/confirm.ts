// What the adapters share: a tool call as a console instance, and its confirmation.
import { createHash } from "node:crypto";

import { bindingsDigest } from "./canonical.js";
import { Console, type Instance, resolutionOf, WAITING } from "./client.js";
import { NotFound } from "./errors.js";

export const ALREADY_DONE =
  "This call was already confirmed in the console and carried out once; it was not run again. Do not retry it.";

export interface CallSpec {
  taskClass: string;
  principal: string;
  /** The runtime's statement of the world per slot. */
  world?: Record<string, Record<string, unknown>>;
  /** Whom the receipt is for (registered for the runtime in the console's admin). */
  audience?: string;
  /** The client (default: `new Console()` from CONSOLE_URL and CONSOLE_API_KEY). */
  console?: Console | (() => Console);
}

export function consoleOf(spec: CallSpec): Console {
  const made = spec.console;
  return made instanceof Console ? made : made ? made() : new Console();
}

/** The call's instance: opened once with its arguments as beliefs (source `inference`) and
 * exactly its keys as slots, under a key of the framework, the call id and the arguments'
 * digest (the same call finds it again; other arguments under a reused id are asked again). */
export async function openCall(
  client: Console,
  spec: CallSpec,
  framework: string,
  callId: string,
  input: Record<string, unknown>,
): Promise<Instance> {
  let key = `${framework}:${callId}:${bindingsDigest(input)}`;
  if (key.length > 200) key = `${framework}:${createHash("sha256").update(key).digest("hex")}`;
  const world = spec.world ?? {};
  const beliefs = Object.entries(input).map(([slot, value]) => ({
    slot,
    value,
    source: "inference",
    ...(world[slot] ? { world_ref: world[slot] } : {}),
  }));
  let instance = await client.openInstance(spec.taskClass, spec.principal, {
    beliefs: beliefs as never,
    slots: Object.keys(input),
    idempotencyKey: key,
    ...(spec.world ? { world: spec.world } : {}),
    ...(spec.audience ? { audience: spec.audience } : {}),
  });
  if (instance.status === "open") {
    await client.plan(instance.id);
    instance = await client.get(instance.id);
  }
  return instance;
}

/** Whether the call needs, or needed, the person: it waits for people, or it had a blocking
 * prompt (answered since, or rejected). A framework that checks again on resume whether an
 * approved call needed approval gets the same answer then. */
export function askedThePerson(instance: Instance): boolean {
  return WAITING.has(instance.status) || (instance.prompts ?? []).some((p) => p.blocking);
}

export function rejectionMessage(instance: Instance, baseUrl: string): string {
  const reason = resolutionOf(instance, baseUrl).reason ?? "no reason given";
  return `The person rejected this call in the confirmation console. Their reason: ${reason}`;
}

/** What the model reads when the person changed its values; null when they did not. */
export function changesMessage(
  asked: Record<string, unknown>,
  bindings: Record<string, unknown>,
): string | null {
  const changed = Object.entries(bindings)
    .filter(([slot, value]) => JSON.stringify(asked[slot]) !== JSON.stringify(value))
    .map(([slot, value]) => `${slot}: ${JSON.stringify(asked[slot])} → ${JSON.stringify(value)}`);
  if (changed.length === 0) return null;
  return `The person changed values in the confirmation console; the tool ran with theirs, not yours: ${changed.join("; ")}`;
}

export type Confirmed =
  | { kind: "confirmed"; bindings: Record<string, unknown>; receipt: string }
  | { kind: "replayed" }
  | { kind: "rejected"; message: string }
  | { kind: "waiting" };

/** Where the call stands; once confirmed, its bindings with the receipt verified against them
 * and redeemed (so a confirmation runs the action once: after that it is `replayed`). */
export async function confirmCall(client: Console, instance: Instance, audience?: string): Promise<Confirmed> {
  if (WAITING.has(instance.status) || instance.status === "open") return { kind: "waiting" };
  if (instance.status !== "ready") return { kind: "rejected", message: rejectionMessage(instance, client.baseUrl) };
  const state = (instance as { receipt_state?: string | null }).receipt_state;
  if (state === "redeemed") return { kind: "replayed" };
  const bindings = (instance.bindings ?? {}) as Record<string, unknown>;
  if (!instance.receipt) throw new NotFound(404, { error: "receipt_missing", detail: `instance ${instance.id} has no usable receipt (${state})` });
  const receipt = await client.verifyReceipt(instance.receipt, { bindings, ...(audience ? { audience } : {}) });
  try {
    await client.redeem(receipt.token, receipt.bindingsDigest);
  } catch (error) {
    if (error instanceof Error && error.name === "ReceiptRedeemed") return { kind: "replayed" };
    throw error;
  }
  return { kind: "confirmed", bindings, receipt: receipt.token };
}
