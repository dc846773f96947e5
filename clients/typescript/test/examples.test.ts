// The offline examples, run as a developer runs them, against a live console: each waits for
// alice and sends what she confirmed.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";

import { Console } from "../src/client.js";
import { type LiveConsole, Person, startConsole } from "./live.js";

let live: LiveConsole;
let alice: Person;

before(async () => {
  live = await startConsole();
  alice = new Person(live.url);
  await alice.signIn();
  await new Console({ baseUrl: live.url, apiKey: live.key }).registerTaskClass("payments.transfer", {
    name: "Transfer",
    slots: [{ key: "recipient_account" }, { key: "amount", value_type: "number" }],
    decisions: [{ key: "send_transfer", slots: ["recipient_account", "amount"] }],
  });
});

after(async () => {
  await live?.stop();
});

async function example(name: string): Promise<string> {
  const script = fileURLToPath(new URL(`../examples/${name}.js`, import.meta.url));
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, CONSOLE_URL: live.url, CONSOLE_API_KEY: live.key },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8");
  });
  await alice.answer("confirm", {}, "recipient_account");
  await alice.answer("edit", { value: "99.5" }, "amount");
  const code = await new Promise((done) => child.once("exit", done));
  assert.equal(code, 0, out);
  return out;
}

for (const name of ["ai-sdk-transfer", "openai-agents-transfer"]) {
  test(`${name} waits for alice and sends her amount`, async () => {
    const out = await example(name);
    assert.match(out, /alice answers in the console/);
    assert.match(out, /sent 99\.5 EUR to DE89 3704 0044 0532 0130 00/);
  });
}
