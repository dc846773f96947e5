// The shared test vectors (tests/vectors/canonical.json): the same text and digest as the
// console and the Python client compute.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { bindingsDigest, canonicalJson } from "../src/canonical.js";
import { createHash } from "node:crypto";

interface Vector {
  name: string;
  input: unknown;
  canonical: string;
  sha256: string;
}

const VECTORS = JSON.parse(
  readFileSync(new URL("../../../../tests/vectors/canonical.json", import.meta.url), "utf8"),
) as Vector[];

test("every vector canonicalises and digests as the console does", () => {
  assert.ok(VECTORS.length > 20);
  for (const vector of VECTORS) {
    const text = canonicalJson(vector.input);
    assert.equal(text, vector.canonical, vector.name);
    assert.equal(createHash("sha256").update(text, "utf8").digest("hex"), vector.sha256, vector.name);
  }
});

test("120.0 and 120 are one amount, as the server digests them", () => {
  assert.equal(bindingsDigest(JSON.parse('{"amount": 120.0}')), bindingsDigest({ amount: 120 }));
  assert.equal(canonicalJson({ b: 1, a: [1e21, 0.1, -0] }), '{"a":[1e+21,0.1,0],"b":1}');
});

test("values JSON cannot hold are refused", () => {
  assert.throws(() => canonicalJson(Number.NaN), TypeError);
  assert.throws(() => canonicalJson({ x: Infinity }), TypeError);
  assert.throws(() => canonicalJson(10n), TypeError);
});
