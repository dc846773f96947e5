// RFC 8785 (JSON Canonicalization Scheme) and the console's digests: SHA-256 of the canonical
// text. The repository's tests/vectors/canonical.json is the contract (test/canonical.test.ts).
import { createHash } from "node:crypto";

/** The RFC 8785 text of a JSON value: keys sorted by UTF-16 code units, no whitespace, numbers
 * and strings as ECMAScript's JSON.stringify writes them. NaN and infinities are refused. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") {
    return JSON.stringify(value);
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value)) {
      throw new TypeError(`${value} is not a JSON number`);
    }
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    return `[${value.map((item) => canonicalJson(item)).join(",")}]`;
  }
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(
      ([, item]) => item !== undefined,
    );
    // Array.prototype.sort compares UTF-16 code units, as RFC 8785 says.
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(",")}}`;
  }
  throw new TypeError(`${typeof value} is not JSON`);
}

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** The digest a receipt's `bindings_digest` claims: SHA-256 (hex) of the canonical bindings. */
export function bindingsDigest(bindings: Record<string, unknown>): string {
  return sha256(canonicalJson(bindings));
}

/** The digest of `{slot: world_ref}` over the bound irreversible slots (null: no reference). */
export function worldsDigest(worlds: Record<string, unknown>): string {
  return sha256(canonicalJson(worlds));
}

export const CANONICALIZATION = "RFC8785";
