// The runtime's client: the console's API with typed bodies and errors, the long-poll, retries
// of writes under one Idempotency-Key, and receipts checked with the console's cached JWKS.
import { randomUUID } from "node:crypto";

import type { JSONWebKeySet } from "jose";

import type { components } from "./api.js";
import {
  ConsoleTimeout,
  ConsoleUnavailable,
  type ErrorBody,
  errorFor,
  InstanceExpired,
  WaitTimeout,
} from "./errors.js";
import { JWKS_PATH, type Receipt, type ReceiptChecks, verifyReceipt } from "./receipts.js";

type Schemas = components["schemas"];
export type Instance = Schemas["InstanceOut"];
export type Plan = Schemas["PlanOut"];
export type TaskClass = Schemas["TaskClassOut"];
export type InstancePage = Schemas["InstanceSummaryPageOut"];
export type TaskClassPage = Schemas["TaskClassSummaryPageOut"];
export type Redemption = Schemas["RedeemOut"];
export type TaskClassIn = Schemas["TaskClassInRequest"];
export type BeliefIn = Schemas["BeliefInRequest"];

export const WAITING = new Set(["awaiting_user", "awaiting_approval", "awaiting_signature"]);
const LONG_POLL_SECONDS = 25;
const LONG_POLL_GRACE_MS = 15_000;
const WRITE_ATTEMPTS = 3;

/** Where an instance stands; once `ready`, its bindings (digest checked by the receipt). */
export interface Resolution {
  instanceId: string;
  status: string;
  url: string;
  bindings: Record<string, unknown> | null;
  bindingsDigest: string | null;
  receipt: string | null;
  receiptState: string | null;
  /** A rejection's or cancellation's reason. */
  reason: string | null;
  rejected: boolean;
  instance: Instance;
}

export interface ConsoleOptions {
  /** Default: CONSOLE_URL, else http://127.0.0.1:8000. */
  baseUrl?: string;
  /** Default: CONSOLE_API_KEY. */
  apiKey?: string;
  /** Milliseconds to wait for an answer (a long-poll waits longer). Default 30 s. */
  timeoutMs?: number;
  fetch?: typeof globalThis.fetch;
}

export interface OpenOptions {
  world?: Record<string, unknown>;
  beliefs?: BeliefIn[];
  slots?: string[];
  audience?: string;
  /** The same key and body again returns the first instance; one is made if none is given,
   * and a write that brings no answer is sent again under it. */
  idempotencyKey?: string;
}

interface Call {
  method: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

export function resolutionOf(instance: Instance, baseUrl: string): Resolution {
  const rejection = [...(instance.prompts ?? [])].reverse().find((p) => p.action === "reject");
  return {
    instanceId: instance.id,
    status: instance.status,
    url: `${baseUrl}/instances/${instance.id}/`,
    bindings: (instance.bindings as Record<string, unknown> | null) ?? null,
    bindingsDigest: instance.bindings_digest ?? null,
    receipt: instance.receipt ?? null,
    receiptState: (instance as { receipt_state?: string | null }).receipt_state ?? null,
    reason: rejection?.reason_given ?? instance.status_reason ?? null,
    rejected: rejection !== undefined,
    instance,
  };
}

export class Console {
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly timeoutMs: number;
  private readonly fetch: typeof globalThis.fetch;
  private keys: { jwks: JSONWebKeySet; at: number } | null = null;

  constructor(options: ConsoleOptions = {}) {
    this.baseUrl = (options.baseUrl ?? process.env.CONSOLE_URL ?? "http://127.0.0.1:8000").replace(
      /\/+$/,
      "",
    );
    const key = options.apiKey ?? process.env.CONSOLE_API_KEY;
    if (!key) throw new TypeError("no runtime key: pass apiKey or set CONSOLE_API_KEY");
    this.apiKey = key;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  /** The instance's page, where its principal answers. */
  pageUrl(instanceId: string): string {
    return `${this.baseUrl}/instances/${instanceId}/`;
  }

  private async send(call: Call): Promise<Response> {
    const url = call.path.startsWith("/") ? this.baseUrl + call.path : `${this.baseUrl}/api/v1/${call.path}`;
    const timeoutMs = call.timeoutMs ?? this.timeoutMs;
    let response: Response;
    try {
      response = await this.fetch(url, {
        method: call.method,
        headers: {
          Authorization: `Api-Key ${this.apiKey}`,
          Accept: "application/json",
          ...(call.body !== undefined ? { "Content-Type": "application/json" } : {}),
          ...call.headers,
        },
        ...(call.body !== undefined ? { body: JSON.stringify(call.body) } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const write = call.method !== "GET";
      const advice = write
        ? " A write may have taken effect: send it again with the same Idempotency-Key."
        : "";
      if (error instanceof DOMException && error.name === "TimeoutError") {
        throw new ConsoleTimeout(`The console at ${url} did not answer within ${timeoutMs} ms.${advice}`, {
          cause: error,
        });
      }
      throw new ConsoleUnavailable(
        `The console at ${url} could not be reached (is it running, and is CONSOLE_URL right?).${advice}`,
        { cause: error },
      );
    }
    return response;
  }

  private async json<T>(call: Call): Promise<T> {
    const response = await this.send(call);
    return (await this.decode(response)) as T;
  }

  private async decode(response: Response): Promise<unknown> {
    const text = await response.text();
    if (response.ok) return text ? JSON.parse(text) : {};
    let body: ErrorBody;
    try {
      const parsed = JSON.parse(text) as Partial<ErrorBody>;
      body = { error: String(parsed.error ?? `http_${response.status}`), ...parsed } as ErrorBody;
    } catch {
      body = { error: `http_${response.status}`, detail: text.slice(0, 500) };
    }
    throw errorFor(response.status, body);
  }

  /** A write, sent again under its Idempotency-Key while it brings no answer. */
  private async write<T>(call: Call): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.json<T>(call);
      } catch (error) {
        const noAnswer = error instanceof ConsoleUnavailable || error instanceof ConsoleTimeout;
        if (!noAnswer || attempt >= WRITE_ATTEMPTS) throw error;
        await new Promise((done) => setTimeout(done, 200 * attempt));
      }
    }
  }

  registerTaskClass(key: string, body: TaskClassIn): Promise<TaskClass> {
    return this.json({ method: "PUT", path: `task-classes/${encodeURIComponent(key)}/`, body });
  }

  openInstance(taskClass: string, principal: string, options: OpenOptions = {}): Promise<Instance> {
    const body: Record<string, unknown> = { task_class: taskClass, principal };
    if (options.world !== undefined) body.world = options.world;
    if (options.beliefs !== undefined) body.beliefs = options.beliefs;
    if (options.slots !== undefined) body.slots = options.slots;
    if (options.audience !== undefined) body.audience = options.audience;
    const headers = { "Idempotency-Key": options.idempotencyKey ?? randomUUID() };
    return this.write({ method: "POST", path: "instances/", body, headers });
  }

  plan(instanceId: string): Promise<Plan> {
    return this.write({ method: "POST", path: `instances/${instanceId}/plan/` });
  }

  get(instanceId: string): Promise<Instance> {
    return this.json({ method: "GET", path: `instances/${instanceId}/` });
  }

  cancel(instanceId: string, reason?: string): Promise<Instance> {
    return this.json({
      method: "POST",
      path: `instances/${instanceId}/cancel/`,
      body: reason ? { reason } : {},
    });
  }

  listInstances(query: { status?: string; principal?: string; limit?: number; offset?: number } = {}): Promise<InstancePage> {
    return this.json({ method: "GET", path: `instances/?${search(query)}` });
  }

  listTaskClasses(query: { limit?: number; offset?: number } = {}): Promise<TaskClassPage> {
    return this.json({ method: "GET", path: `task-classes/?${search(query)}` });
  }

  /** Wait until the instance no longer waits for people: a long-poll (`Prefer: wait=25` with
   * `If-None-Match`), asked again at once after each answer. Throws `InstanceExpired` when the
   * person did not answer in time, `WaitTimeout` after `timeoutMs`. */
  async wait(instanceId: string, { timeoutMs }: { timeoutMs?: number } = {}): Promise<Resolution> {
    const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
    let etag: string | null = null;
    let instance: Instance | null = null;
    for (;;) {
      const left = deadline - Date.now();
      const seconds = Math.max(0, Math.min(LONG_POLL_SECONDS, Math.floor(left / 1000)));
      const headers: Record<string, string> = {};
      if (etag) headers["If-None-Match"] = etag;
      if (seconds > 0) headers.Prefer = `wait=${seconds}`;
      const response = await this.send({
        method: "GET",
        path: `instances/${instanceId}/`,
        headers,
        timeoutMs: seconds * 1000 + LONG_POLL_GRACE_MS,
      });
      if (response.status !== 304) {
        instance = (await this.decode(response)) as Instance;
        etag = response.headers.get("ETag");
      } else {
        await response.body?.cancel();
      }
      if (instance !== null && !WAITING.has(instance.status)) return this.settled(instance);
      if (Date.now() >= deadline) {
        throw new WaitTimeout(`instance ${instanceId} still awaits the person after ${timeoutMs} ms`);
      }
      if (seconds === 0) await new Promise((done) => setTimeout(done, 250));
    }
  }

  private settled(instance: Instance): Resolution {
    if (instance.status === "expired") {
      throw new InstanceExpired(
        `instance ${instance.id} expired before the person answered; nothing of it binds. Open a new instance to ask again.`,
      );
    }
    return resolutionOf(instance, this.baseUrl);
  }

  /** The common case: open with one belief per value (source `inference`) and the world,
   * plan, and, unless `wait` is false, wait for the person when the plan blocks. */
  async resolve(
    taskClass: string,
    principal: string,
    values: Record<string, unknown>,
    options: OpenOptions & { wait?: boolean; timeoutMs?: number } = {},
  ): Promise<Resolution> {
    const world = options.world ?? {};
    const beliefs = Object.entries(values).map(([slot, value]) => {
      const ref = world[slot];
      return {
        slot,
        value,
        source: "inference",
        ...(ref && typeof ref === "object" ? { world_ref: ref as Record<string, unknown> } : {}),
      } as BeliefIn;
    });
    let instance = await this.openInstance(taskClass, principal, { ...options, beliefs });
    if (instance.status === "open") {
      await this.plan(instance.id);
      instance = await this.get(instance.id);
    }
    if (WAITING.has(instance.status)) {
      if (options.wait === false) return resolutionOf(instance, this.baseUrl);
      return this.wait(instance.id, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs });
    }
    if (instance.status === "ready" && !instance.receipt) instance = await this.get(instance.id);
    return this.settled(instance);
  }

  /** The console's public receipt keys, fetched once and again after an hour or for a `kid`
   * not seen yet (at most every 5 s). */
  async jwks(kid?: string): Promise<JSONWebKeySet> {
    const age = this.keys ? Date.now() - this.keys.at : Infinity;
    const known = kid === undefined || (this.keys?.jwks.keys ?? []).some((k) => k.kid === kid);
    if (this.keys === null || age > 3_600_000 || (!known && age > 5_000)) {
      this.keys = { jwks: await this.json<JSONWebKeySet>({ method: "GET", path: JWKS_PATH }), at: Date.now() };
    }
    return this.keys.jwks;
  }

  /** `verifyReceipt` with this console's keys. */
  async verifyReceipt(token: string, checks: ReceiptChecks = {}): Promise<Receipt> {
    const header = JSON.parse(Buffer.from(token.split(".")[0] ?? "", "base64url").toString("utf8") || "{}") as {
      kid?: string;
    };
    return verifyReceipt(token, await this.jwks(header.kid), checks);
  }

  /** Use a receipt, once: `ReceiptRedeemed` after that, `ReceiptRevoked` once vetoed. */
  redeem(token: string, bindingsDigest?: string): Promise<Redemption> {
    const body = bindingsDigest ? { receipt: token, bindings_digest: bindingsDigest } : { receipt: token };
    return this.json({ method: "POST", path: "receipts/redeem/", body });
  }
}

function search(query: Record<string, string | number | undefined>): string {
  const given = Object.entries(query).filter(([, v]) => v !== undefined) as [string, string | number][];
  return new URLSearchParams(given.map(([k, v]) => [k, String(v)])).toString();
}
