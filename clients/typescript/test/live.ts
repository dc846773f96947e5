// A live console for the tests: `make serve`'s server (console.serve, DEBUG off) on a free
// port with a fresh SQLite database, a runtime key and alice, who answers through the API with
// her session, as her browser would.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { Console } from "../src/client.js";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../../../..");
const PYTHON = process.env.CONSOLE_PYTHON ?? join(ROOT, ".venv", "bin", "python");
export const PASSWORD = "correct horse battery staple 42";

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => done(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export interface LiveConsole {
  url: string;
  key: string;
  stop(): Promise<void>;
}

export async function startConsole(): Promise<LiveConsole> {
  if (!existsSync(PYTHON)) {
    // A fresh clone: the console's virtualenv, as the repository's `make install` makes it.
    execFileSync("make", ["install"], { cwd: ROOT, stdio: "inherit" });
  }
  const dir = mkdtempSync(join(tmpdir(), "console-ts-"));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DEBUG: "false",
    DJANGO_SECRET_KEY: randomBytes(32).toString("hex"),
    DJANGO_ALLOWED_HOSTS: "127.0.0.1",
    DJANGO_SECURE_SSL_REDIRECT: "false",
    CONSOLE_RECEIPT_SIGNING_KEYS: join(dir, "receipts.pem"),
    CONSOLE_WEBAUTHN_RP_ID: "localhost",
    CONSOLE_WEBAUTHN_ORIGINS: "http://localhost",
    DATABASE_URL: `sqlite:///${join(dir, "console.sqlite3")}`,
    STATIC_ROOT: join(dir, "static"),
  };
  delete env.DJANGO_SETTINGS_MODULE;
  const manage = (...args: string[]) =>
    execFileSync(PYTHON, ["manage.py", ...args], { cwd: ROOT, env, encoding: "utf8" });
  manage("receipt_key", join(dir, "receipts.pem"));
  manage("migrate", "--noinput", "--verbosity", "0");
  manage("collectstatic", "--noinput", "--verbosity", "0");
  const key = manage("runtime_key", "ts-runtime").trim().split("\n").pop() ?? "";
  manage(
    "shell",
    "-c",
    `from django.contrib.auth.models import User; User.objects.create_user("alice", password=${JSON.stringify(PASSWORD)})`,
  );
  const port = await freePort();
  const server: ChildProcess = spawn(
    PYTHON,
    ["-m", "console.serve", "--host", "127.0.0.1", "--port", String(port), "--workers", "1", "--log-level", "warning"],
    { cwd: ROOT, env, stdio: ["ignore", "ignore", "inherit"] },
  );
  const url = `http://127.0.0.1:${port}`;
  for (let tries = 0; ; tries++) {
    if (server.exitCode !== null) throw new Error(`the console exited (${server.exitCode})`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (tries > 600) throw new Error("the console did not start within 60 s");
    await new Promise((done) => setTimeout(done, 100));
  }
  return {
    url,
    key,
    async stop() {
      server.kill("SIGTERM");
      await new Promise((done) => server.once("exit", done));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** alice in her browser: signed in with her password; answers prompts with her session. */
export class Person {
  private cookies = new Map<string, string>();
  constructor(private readonly url: string) {}

  private remember(response: Response): void {
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(";");
      const [name, ...value] = (pair ?? "").split("=");
      if (name) this.cookies.set(name.trim(), value.join("="));
    }
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    return { Cookie: cookie, "X-CSRFToken": this.cookies.get("csrftoken") ?? "", ...extra };
  }

  async signIn(): Promise<void> {
    this.remember(await fetch(`${this.url}/accounts/login/`));
    const form = new URLSearchParams({
      username: "alice",
      password: PASSWORD,
      csrfmiddlewaretoken: this.cookies.get("csrftoken") ?? "",
    });
    const response = await fetch(`${this.url}/accounts/login/`, {
      method: "POST",
      body: form,
      redirect: "manual",
      headers: this.headers({ "Content-Type": "application/x-www-form-urlencoded" }),
    });
    if (response.status !== 302) throw new Error(`alice could not sign in (${response.status})`);
    this.remember(response);
  }

  async openPrompts(): Promise<Array<Record<string, unknown>>> {
    const response = await fetch(`${this.url}/api/v1/prompts/?state=open`, { headers: this.headers() });
    const page = (await response.json()) as { results: Array<Record<string, unknown>> };
    return page.results.filter((p) => p.blocking);
  }

  /** Answer the open blocking prompt of `slot` (any, without): confirm, edit (value), reject. */
  async answer(action: string, data: Record<string, unknown> = {}, slot?: string): Promise<void> {
    for (let tries = 0; tries < 300; tries++) {
      const prompt = (await this.openPrompts()).find((p) => slot === undefined || p.slot === slot);
      if (prompt) {
        const body = { action, version: prompt.version, ...data };
        if ("value" in data) Object.assign(body, { value_confirmation: data.value });
        const response = await fetch(`${this.url}/api/v1/prompts/${prompt.id}/respond/`, {
          method: "POST",
          body: JSON.stringify(body),
          headers: this.headers({ "Content-Type": "application/json" }),
        });
        if (!response.ok) throw new Error(`alice's answer was refused: ${await response.text()}`);
        return;
      }
      await new Promise((done) => setTimeout(done, 100));
    }
    throw new Error("no prompt reached alice");
  }
}

/** A live console with the transfer class registered and alice signed in, for a test file:
 * `const setup = withTransferConsole();` then `setup.live`, `setup.client`, `setup.alice`. */
export function withTransferConsole(hooks: {
  before: (fn: () => Promise<void>) => void;
  after: (fn: () => Promise<void>) => void;
}): { live: LiveConsole; client: Console; alice: Person } {
  const setup = {} as { live: LiveConsole; client: Console; alice: Person };
  hooks.before(async () => {
    setup.live = await startConsole();
    setup.client = new Console({ baseUrl: setup.live.url, apiKey: setup.live.key });
    setup.alice = new Person(setup.live.url);
    await setup.alice.signIn();
    await setup.client.registerTaskClass("payments.transfer", {
      name: "Transfer",
      slots: [{ key: "recipient_account" }, { key: "amount", value_type: "number" }],
      decisions: [{ key: "send_transfer", slots: ["recipient_account", "amount"] }],
    });
  });
  hooks.after(async () => {
    await setup.live?.stop();
  });
  return setup;
}

export const TRANSFER = { recipient_account: "DE89 3704 0044 0532 0130 00", amount: 120 };
