// A real OpenID Connect provider (panva's oidc-provider) on loopback, for the console's single
// sign-on tests: one confidential client that must use PKCE with S256, and accounts read from a
// JSON file at every sign-in, so a test can change an account's groups between two sign-ins.
//
//   node server.mjs --accounts accounts.json --redirect-uri http://localhost:8000/accounts/oidc/callback/ \
//                   --client-id console --client-secret s3cret
//
// accounts.json: {"<sub>": {"preferred_username": "...", "email": "...", "groups": ["..."]}}.
// At the provider's own sign-in form (its development interactions) the login is the account's
// sub and any password is accepted. The first line written to stdout is {"issuer": "<url>"}.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { parseArgs } from "node:util";

import Provider from "oidc-provider";

const { values: args } = parseArgs({
  options: {
    accounts: { type: "string" },
    "redirect-uri": { type: "string" },
    "client-id": { type: "string" },
    "client-secret": { type: "string" },
    port: { type: "string", default: "0" },
  },
});
for (const name of ["accounts", "redirect-uri", "client-id", "client-secret"]) {
  if (!args[name]) {
    console.error(`--${name} is required`);
    process.exit(2);
  }
}

function readAccounts() {
  return JSON.parse(readFileSync(args.accounts, "utf8"));
}

// The port first: the issuer (and so the provider) names it.
const server = createServer();
await new Promise((resolve) => server.listen(Number(args.port), "127.0.0.1", resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: args["client-id"],
      client_secret: args["client-secret"],
      redirect_uris: [args["redirect-uri"]],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
    },
  ],
  // Every authorization request must carry a PKCE challenge (only S256 is accepted).
  pkce: { required: () => true },
  claims: {
    openid: ["sub"],
    email: ["email", "email_verified"],
    profile: ["preferred_username", "name"],
    groups: ["groups"],
  },
  cookies: { keys: [randomBytes(32).toString("hex")] },
  jwks: { keys: [{ ...privateKey.export({ format: "jwk" }), kid: "test", use: "sig", alg: "RS256" }] },
  features: { devInteractions: { enabled: true } },
  // Re-read at every sign-in and every userinfo call: the file is the truth at that moment.
  async findAccount(ctx, sub) {
    const account = readAccounts()[sub];
    if (!account) return undefined;
    return {
      accountId: sub,
      async claims() {
        const current = readAccounts()[sub] ?? {};
        return { email_verified: true, ...current, sub };
      },
    };
  },
});
// Development interactions warn once at start: expected here, and kept off the test's output.
provider.on("server_error", (_ctx, error) => console.error("server_error", error));

server.on("request", provider.callback());
process.stdout.write(`${JSON.stringify({ issuer })}\n`);

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
