// The offline examples, run as a developer runs them, against a live console: each waits for
// alice and sends what she confirmed.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";

import { withTransferConsole } from "./live.js";

const setup = withTransferConsole({ before, after });

async function example(name: string): Promise<string> {
  const script = fileURLToPath(new URL(`../examples/${name}.js`, import.meta.url));
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, CONSOLE_URL: setup.live.url, CONSOLE_API_KEY: setup.live.key },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8");
  });
  await setup.alice.answer("confirm", {}, "recipient_account");
  await setup.alice.answer("edit", { value: "99.5" }, "amount");
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
