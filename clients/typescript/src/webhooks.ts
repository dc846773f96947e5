// Standard Webhooks signatures (webhook-id, webhook-timestamp, webhook-signature: v1,...).
import { createHmac, timingSafeEqual } from "node:crypto";

import { WebhookVerificationError } from "./errors.js";

export interface WebhookEvent {
  id: string;
  type: string;
  timestamp: Date;
  data: Record<string, unknown>;
}

type Headers = Record<string, string | string[] | undefined> | globalThis.Headers;

function header(headers: Headers, name: string): string {
  const value =
    headers instanceof globalThis.Headers
      ? headers.get(name)
      : (headers[name] ?? headers[name.toLowerCase()]);
  const found = Array.isArray(value) ? value[0] : value;
  if (!found) throw new WebhookVerificationError(`missing ${name} header`);
  return found;
}

/** Check a delivery's signature with the endpoint's secret (`whsec_...`) and that its
 * timestamp is within `toleranceSeconds` (300) of now; the parsed event, or
 * WebhookVerificationError. Pass the body exactly as received. */
export function verifyWebhook(
  body: string,
  headers: Headers,
  secret: string,
  { toleranceSeconds = 300, now = new Date() }: { toleranceSeconds?: number; now?: Date } = {},
): WebhookEvent {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  const seconds = Number(timestamp);
  if (!/^[0-9]+$/.test(timestamp) || Math.abs(now.getTime() / 1000 - seconds) > toleranceSeconds) {
    throw new WebhookVerificationError("the webhook's timestamp is missing or too old");
  }
  if (!secret.startsWith("whsec_")) {
    throw new WebhookVerificationError("the secret must start with whsec_");
  }
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest();
  const matches = signatures.split(" ").some((entry) => {
    const [version, signature] = entry.split(",", 2);
    if (version !== "v1" || !signature) return false;
    const given = Buffer.from(signature, "base64");
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matches) throw new WebhookVerificationError("no signature matches");
  let event: { type?: unknown; data?: unknown };
  try {
    event = JSON.parse(body) as { type?: unknown; data?: unknown };
  } catch {
    throw new WebhookVerificationError("the body is not JSON");
  }
  return {
    id,
    type: String(event.type ?? ""),
    timestamp: new Date(seconds * 1000),
    data: (event.data ?? {}) as Record<string, unknown>,
  };
}
