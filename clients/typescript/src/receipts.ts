// Receipts: the console's Ed25519-signed JWS of exactly what a person approved. A tool server
// verifies one against the arguments it is about to execute, offline, with the console's JWKS.
import {
  createLocalJWKSet,
  errors as jose,
  type JSONWebKeySet,
  jwtVerify,
  type JWTPayload,
} from "jose";

import { bindingsDigest, CANONICALIZATION, canonicalJson, worldsDigest } from "./canonical.js";
import {
  ReceiptAudienceMismatch,
  ReceiptDigestMismatch,
  ReceiptExpired,
  ReceiptInvalid,
  ReceiptNotApprovedByPerson,
} from "./errors.js";

export const RECEIPT_TYPE = "approval-receipt+jwt";
export const JWKS_PATH = "/.well-known/jwks.json";

/** Who vouched for one bound value: `via` is console (a person), runtime or policy. */
export interface Bound {
  route: string;
  rule: string;
  source: string | null;
  via: "console" | "runtime" | "policy";
}

/** A verified receipt's claims. */
export interface Receipt {
  token: string;
  jti: string;
  instanceId: string;
  taskClass: string;
  principal: string;
  audience: string;
  issuer: string;
  issuedAt: Date;
  expiresAt: Date;
  decisions: string[];
  bindingsDigest: string;
  worldsDigest: string | null;
  bound: Record<string, Bound>;
  vouchedByRuntime: string[];
  canonicalization: string | null;
}

export interface ReceiptChecks {
  /** The arguments about to be executed: their digest must be the receipt's. */
  bindings?: Record<string, unknown>;
  /** `{slot: world_ref}` over the bound irreversible slots, checked against `worlds_digest`. */
  worlds?: Record<string, unknown>;
  /** Who the receipt must be for (the `aud` claim). */
  audience?: string;
  issuer?: string;
  /** Refuse irreversible values only the runtime vouched for (default true). */
  personRequired?: boolean;
  /** The time to check expiry at (default: now). */
  now?: Date;
}

function text(payload: JWTPayload, claim: string): string {
  const value = payload[claim];
  if (typeof value !== "string" || value === "") {
    throw new ReceiptInvalid(`the receipt has no ${claim} claim`);
  }
  return value;
}

function strings(payload: JWTPayload, claim: string): string[] {
  const value = payload[claim] ?? [];
  if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) {
    throw new ReceiptInvalid(`the receipt's ${claim} claim is not a list of names`);
  }
  return value as string[];
}

function digestOf(data: Record<string, unknown>, form: string | null, worlds: boolean): string {
  if (form !== null && form !== CANONICALIZATION) {
    throw new ReceiptInvalid(`the receipt's canonicalization ${form} is not ${CANONICALIZATION}`);
  }
  // A receipt issued before the claim digested Python's sorted JSON, which RFC 8785 equals
  // except in how some numbers are written (120.0): such a receipt with those numbers fails
  // here, never passes.
  return worlds ? worldsDigest(data) : bindingsDigest(data);
}

/** Verify `token` with the console's `jwks`: signature (EdDSA, the header's `kid`), type,
 * expiry, `audience`, `issuer`, the digest of `bindings` (and of `worlds`), and that a person
 * vouched for every irreversible value. Throws a `ReceiptError` naming the check that failed. */
export async function verifyReceipt(
  token: string,
  jwks: JSONWebKeySet,
  checks: ReceiptChecks = {},
): Promise<Receipt> {
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, createLocalJWKSet(jwks), {
      algorithms: ["EdDSA"],
      typ: RECEIPT_TYPE,
      ...(checks.audience !== undefined ? { audience: checks.audience } : {}),
      ...(checks.issuer !== undefined ? { issuer: checks.issuer } : {}),
      ...(checks.now !== undefined ? { currentDate: checks.now } : {}),
      requiredClaims: ["exp", "iat", "jti", "aud"],
    }));
  } catch (error) {
    if (error instanceof jose.JWTExpired) throw new ReceiptExpired("the receipt has expired");
    if (error instanceof jose.JWTClaimValidationFailed && error.claim === "aud") {
      throw new ReceiptAudienceMismatch(`the receipt is not for ${checks.audience}`);
    }
    const why = error instanceof Error ? error.message : String(error);
    throw new ReceiptInvalid(`the receipt does not verify: ${why}`);
  }
  const canonicalization =
    typeof payload.canonicalization === "string" ? payload.canonicalization : null;
  const claimed = text(payload, "bindings_digest");
  if (checks.bindings !== undefined) {
    const actual = digestOf(checks.bindings, canonicalization, false);
    if (actual !== claimed) {
      throw new ReceiptDigestMismatch(
        "these are not the values the receipt approves (their digest differs)",
      );
    }
  }
  const worlds = typeof payload.worlds_digest === "string" ? payload.worlds_digest : null;
  if (checks.worlds !== undefined && digestOf(checks.worlds, canonicalization, true) !== worlds) {
    throw new ReceiptDigestMismatch("the values were approved in another world (worlds_digest)");
  }
  const vouched = strings(payload, "vouched_by_runtime");
  if ((checks.personRequired ?? true) && vouched.length > 0) {
    throw new ReceiptNotApprovedByPerson(
      `no person confirmed ${vouched.join(", ")}: only the runtime vouched for them`,
      vouched,
    );
  }
  const bound = payload.bound ?? {};
  if (typeof bound !== "object" || bound === null || Array.isArray(bound)) {
    throw new ReceiptInvalid("the receipt's bound claim is not an object");
  }
  return {
    token,
    jti: text(payload, "jti"),
    instanceId: text(payload, "instance"),
    taskClass: text(payload, "task_class"),
    principal: text(payload, "sub"),
    audience: String(payload.aud),
    issuer: String(payload.iss ?? ""),
    issuedAt: new Date((payload.iat ?? 0) * 1000),
    expiresAt: new Date((payload.exp ?? 0) * 1000),
    decisions: strings(payload, "decisions"),
    bindingsDigest: claimed,
    worldsDigest: worlds,
    bound: bound as Record<string, Bound>,
    vouchedByRuntime: vouched,
    canonicalization,
  };
}

export { canonicalJson };
