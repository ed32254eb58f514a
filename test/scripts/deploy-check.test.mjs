// npm run deploy:check and npm run keys:receipt: every refusal, as pure rules over wrangler's own
// reading of a configuration text and over the account's answers (no network), then the script
// end to end against a stand-in Cloudflare API (wrangler's CLOUDFLARE_API_BASE_URL): answers, a
// missing R2 (10042) and a silent API (the check says it could not ask, within its timeout).
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { generateKeyPairSync, webcrypto } from "node:crypto";
import { createServer } from "node:http";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { unstable_readConfig } from "wrangler";
import { accountProblems, configProblems, receiptKeysProblems, requiredSecrets, whyNoAnswer } from "../../src/scripts/deploy-rules.mjs";

const ROOT = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "witness-deploy-check-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const DB_ID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
const SHARD_ID = "1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e";
const GOOD = `name = "witness"
main = "src/index.ts"
compatibility_date = "2026-10-20"
routes = [{ pattern = "audit.acme.io", custom_domain = true }]
[vars]
LOG_ORIGIN_HOST = "audit.acme.io"
[secrets]
required = ["SIGNING_KEYS", "RECEIPT_SIGNING_KEYS"]
[[d1_databases]]
binding = "DB"
database_name = "witness"
database_id = "${DB_ID}"
[[d1_databases]]
binding = "EVENTS_0"
database_name = "witness"
database_id = "${DB_ID}"
[[d1_databases]]
binding = "EVENTS_1"
database_name = "witness-events-1"
database_id = "${SHARD_ID}"
[[r2_buckets]]
binding = "LOGS"
bucket_name = "witness-logs"
[[r2_buckets]]
binding = "ARCHIVE"
bucket_name = "witness-archive"
`;

let n = 0;
/** The configuration as wrangler deploy reads it from this text. */
function configFile(text) {
  const file = join(dir, `wrangler-${++n}.toml`);
  writeFileSync(file, text);
  return file;
}
const configOf = (text, env) => unstable_readConfig({ config: configFile(text), env }, { hideWarnings: true });
const receiptKey = () => generateKeyPairSync("ed25519").privateKey.export({ format: "der", type: "pkcs8" }).toString("base64url");

describe("deploy:check rules over the configuration", () => {
  it("passes a configuration ready for production, and refuses the repository's own (local host, placeholder ids)", () => {
    assert.deepEqual(configProblems(configOf(GOOD)), []);
    const own = configProblems(unstable_readConfig({ config: join(ROOT, "wrangler.toml") }, { hideWarnings: true }));
    assert.match(own[0], /^LOG_ORIGIN_HOST is localhost:8787, the local default: set it to the production host before the first deploy/);
    assert.match(own[1], /^D1 bindings DB, EVENTS_0 \(witness\) have the placeholder id 00000000-0000-0000-0000-000000000000: npx wrangler d1 create witness/);
    assert.match(own[2], /^D1 binding EVENTS_1 \(witness-events-1\) has the placeholder id .*\(or, for one database, delete the EVENTS_1 block\)$/);
    assert.equal(own.length, 3);
  });

  const refusals = [
    ['LOG_ORIGIN_HOST = ""', /^LOG_ORIGIN_HOST is empty: set it in wrangler.toml \[vars\]/],
    ['LOG_ORIGIN_HOST = "localhost:8787"', /^LOG_ORIGIN_HOST is localhost:8787, the local default/],
    ['LOG_ORIGIN_HOST = "127.0.0.1:9000"', /^LOG_ORIGIN_HOST is 127.0.0.1:9000, the local default/],
    ['LOG_ORIGIN_HOST = "https://audit.acme.io/"', /^LOG_ORIGIN_HOST "https:\/\/audit.acme.io\/" is not a bare host name/],
    ['LOG_ORIGIN_HOST = "witness.example.com"', /^LOG_ORIGIN_HOST is witness.example.com, a name reserved for examples/],
    ['LOG_ORIGIN_HOST = "logs.acme.io"', /^LOG_ORIGIN_HOST is logs.acme.io, but wrangler.toml routes the Worker only to audit.acme.io/],
  ];
  for (const [line, message] of refusals) {
    it(`refuses ${line} in one line`, () => {
      const problems = configProblems(configOf(GOOD.replace('LOG_ORIGIN_HOST = "audit.acme.io"', line)));
      assert.equal(problems.length, 1, problems.join("\n"));
      assert.match(problems[0], message);
    });
  }

  it("refuses a host nothing routes to, a placeholder or missing database id; reads the --env section as wrangler does", () => {
    const unrouted = configProblems(configOf(GOOD.replace(/^routes = .*$/m, "")));
    assert.deepEqual(unrouted, ['LOG_ORIGIN_HOST is audit.acme.io, but wrangler.toml routes nothing there: add routes = [{ pattern = "audit.acme.io", custom_domain = true }] (or use the workers.dev host)']);
    assert.deepEqual(configProblems(configOf(GOOD.replace(/^routes = .*$/m, "").replace("audit.acme.io", "witness.acme.workers.dev"))), []);
    const placeholder = configProblems(configOf(GOOD.replace(SHARD_ID, "00000000-0000-0000-0000-000000000001")));
    assert.equal(placeholder.length, 1);
    assert.match(placeholder[0], /^D1 binding EVENTS_1 \(witness-events-1\) has the placeholder id 00000000-0000-0000-0000-000000000001/);
    const noId = configProblems(configOf(GOOD.replace(`database_id = "${SHARD_ID}"`, "")));
    assert.match(noId.join("\n"), /^D1 binding EVENTS_1 \(witness-events-1\) has no database_id: npx wrangler d1 create witness-events-1/);
    // [env.production] replaces vars and bindings (wrangler does not inherit them): the check reads that section.
    const withEnv = `${GOOD.replace('LOG_ORIGIN_HOST = "audit.acme.io"', 'LOG_ORIGIN_HOST = "localhost:8787"')}
[env.production]
routes = [{ pattern = "audit.acme.io", custom_domain = true }]
vars = { LOG_ORIGIN_HOST = "audit.acme.io" }
d1_databases = [{ binding = "DB", database_name = "witness", database_id = "00000000-0000-0000-0000-000000000000" }]
`;
    assert.match(configProblems(configOf(withEnv))[0], /^LOG_ORIGIN_HOST is localhost:8787/);
    assert.deepEqual(configProblems(configOf(withEnv, "production")), ["D1 binding DB (witness) has the placeholder id 00000000-0000-0000-0000-000000000000: npx wrangler d1 create witness, then put the id it prints in wrangler.toml"]);
  });
});

describe("RECEIPT_SIGNING_KEYS and npm run keys:receipt", () => {
  it("keys:receipt prints a value the check accepts and WebCrypto signs with, as the Worker does", async () => {
    // Run as `npm run test:scripts` runs it (npm's variables in the environment), and as `npm run keys:receipt | ...` would.
    const script = [join(ROOT, "src/scripts/keys-receipt.mjs"), "--kid", "2026-11-25"];
    const piped = spawnSync(process.execPath, script, { encoding: "utf8", env: { ...process.env, npm_lifecycle_event: "keys:receipt", npm_config_loglevel: "notice" } });
    assert.equal(piped.status, 1);
    assert.match(piped.stderr, /npm printed its banner into this pipe/);
    const res = spawnSync(process.execPath, script, { encoding: "utf8", env: { ...process.env, npm_lifecycle_event: "test:scripts" } });
    assert.equal(res.status, 0, res.stderr);
    const value = res.stdout.trim();
    assert.match(value, /^2026-11-25:[A-Za-z0-9_-]+$/);
    assert.deepEqual(receiptKeysProblems(value), []);
    // src/sealing/receipt-signing.ts: importKey("pkcs8", base64url-decoded DER, Ed25519).
    const der = Buffer.from(value.slice(value.indexOf(":") + 1), "base64url");
    const key = await webcrypto.subtle.importKey("pkcs8", der, { name: "Ed25519" }, true, ["sign"]);
    const { x } = await webcrypto.subtle.exportKey("jwk", key);
    const pub = await webcrypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x }, { name: "Ed25519" }, false, ["verify"]);
    const data = new TextEncoder().encode("receipt");
    assert.ok(await webcrypto.subtle.verify({ name: "Ed25519" }, pub, await webcrypto.subtle.sign({ name: "Ed25519" }, key, data), data));

    // --file appends (rotation keeps the old key published); a duplicate id is refused.
    const file = join(dir, "receipt-keys");
    const put = (kid) => spawnSync(process.execPath, [join(ROOT, "src/scripts/keys-receipt.mjs"), "--kid", kid, "--file", file], { encoding: "utf8" });
    assert.equal(put("a").status, 0);
    assert.equal(put("b").status, 0);
    assert.match(readFileSync(file, "utf8"), /^a:[A-Za-z0-9_-]+,b:[A-Za-z0-9_-]+\n$/);
    assert.match(put("a").stderr, /already has a key a: pass another --kid/);
  });

  it("refuses, one line per entry, what the Worker could not load", () => {
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey.export({ format: "der", type: "pkcs8" }).toString("base64url");
    const one = (value) => {
      const problems = receiptKeysProblems(value);
      assert.equal(problems.length, 1, `${value}: ${problems.join("\n")}`);
      return problems[0];
    };
    assert.match(one(""), /^RECEIPT_SIGNING_KEYS is empty: generate one with npm run keys:receipt$/);
    assert.match(one("2026-11-25:"), /^RECEIPT_SIGNING_KEYS entry 1 \(2026-11-25\) has no key after the id/);
    assert.match(one(receiptKey()), /^RECEIPT_SIGNING_KEYS entry 1 is not <key id>:<base64url PKCS#8>/);
    assert.match(one(`bad kid:${receiptKey()}`), /^RECEIPT_SIGNING_KEYS entry 1 is not <key id>:<base64url PKCS#8>/);
    assert.match(one(`k:${receiptKey()}==`), /^RECEIPT_SIGNING_KEYS entry 1 \(k\) is not base64url/);
    assert.match(one("k:AAAA"), /^RECEIPT_SIGNING_KEYS entry 1 \(k\) is not a PKCS#8 private key/);
    assert.match(one(`old:${receiptKey()},new:${rsa}`), /^RECEIPT_SIGNING_KEYS entry 2 \(new\) is a rsa key, not Ed25519/);
  });
});

describe("deploy:check rules over the account's answers", () => {
  const config = configOf(GOOD);
  const all = { buckets: { names: new Set(["witness-logs", "witness-archive"]) }, databases: { ids: new Set([DB_ID, SHARD_ID]) }, secrets: { names: new Set(requiredSecrets(config)) } };

  it("passes an account holding everything; names what it lacks with the command that makes it; says when it could not ask", () => {
    assert.deepEqual(requiredSecrets(config), ["SIGNING_KEYS", "RECEIPT_SIGNING_KEYS"]);
    assert.deepEqual(accountProblems(config, all), []);
    assert.deepEqual(accountProblems(config, { ...all, buckets: { names: new Set(["witness-logs"]) } }), [
      "R2 bucket witness-archive (binding ARCHIVE) does not exist in the account: npx wrangler r2 bucket create witness-archive",
    ]);
    assert.deepEqual(accountProblems(config, { ...all, databases: { ids: new Set([DB_ID]) } }), [
      `D1 database ${SHARD_ID} (EVENTS_1: witness-events-1) does not exist in the account: npx wrangler d1 create witness-events-1, then put its id in wrangler.toml (or, for one database, delete the EVENTS_1 block)`,
    ]);
    assert.deepEqual(accountProblems(config, { ...all, secrets: { names: new Set(["SIGNING_KEYS"]) } }), [
      "secret RECEIPT_SIGNING_KEYS is not set: npm run keys:receipt -- --file <a safe place> --put",
    ]);
    const unknown = accountProblems(config, { buckets: { error: "x" }, databases: { error: "y" }, secrets: { error: "z" } });
    assert.deepEqual(unknown, [
      "could not ask the account which R2 buckets exist: x",
      "could not ask the account which D1 databases exist: y",
      "could not ask the account which secrets the Worker has: z",
    ]);
    assert.match(whyNoAnswer("✘ [ERROR] A request to the Cloudflare API failed. Please enable R2 through the Cloudflare Dashboard. [code: 10042]"), /^R2 is not enabled on this account \(error 10042\): enable it in the dashboard/);
    assert.match(whyNoAnswer("In a non-interactive environment, it's necessary to set a CLOUDFLARE_API_TOKEN"), /^not logged in: npx wrangler login, or set CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID$/);
  });
});

/** A stand-in for the Cloudflare API: what an account holds, or no answer at all. */
function fakeApi(account) {
  const server = createServer((req, res) => {
    req.resume();
    if (account === "silent") return; // never answers
    res.setHeader("Content-Type", "application/json");
    const reply = (result, extra = {}) => res.end(JSON.stringify({ success: true, errors: [], messages: [], result, ...extra }));
    if (/\/r2\/buckets/.test(req.url)) {
      if (account.r2 === "disabled") {
        res.statusCode = 403;
        return res.end(JSON.stringify({ success: false, errors: [{ code: 10042, message: "Please enable R2 through the Cloudflare Dashboard." }], messages: [], result: null }));
      }
      return reply({ buckets: account.r2.map((name) => ({ name, creation_date: "2026-01-01T00:00:00.000Z" })) });
    }
    if (/\/d1\/database/.test(req.url)) return reply(account.d1.map((uuid) => ({ uuid, name: "db", version: "production" })), { result_info: { page: 1, per_page: 10, count: account.d1.length, total_count: account.d1.length } });
    if (/\/secrets/.test(req.url)) return reply(account.secrets.map((name) => ({ name, type: "secret_text" })));
    res.statusCode = 404;
    res.end(JSON.stringify({ success: false, errors: [{ code: 7003, message: "unknown route" }], messages: [], result: null }));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** npm run deploy:check against the stand-in, as CI runs it (API token and account id). */
async function deployCheck(account, args = [], env = {}) {
  const server = await fakeApi(account);
  try {
    const started = Date.now();
    const child = spawn(process.execPath, [join(ROOT, "src/scripts/deploy-check.mjs"), "--config", configFile(GOOD), ...args], {
      env: { ...process.env, CLOUDFLARE_API_TOKEN: "test-token", CLOUDFLARE_ACCOUNT_ID: "acc", CLOUDFLARE_API_BASE_URL: `http://127.0.0.1:${server.address().port}/client/v4`, WRANGLER_SEND_METRICS: "false", ...env },
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    const code = await new Promise((resolve) => child.on("close", resolve));
    return { code, out, err, seconds: (Date.now() - started) / 1000 };
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

describe("npm run deploy:check through wrangler", () => {
  it("passes an account holding everything, with the receipt keys checked", { timeout: 120_000 }, async () => {
    const file = join(dir, "keys-ok");
    writeFileSync(file, `k1:${receiptKey()}\n`);
    const res = await deployCheck({ r2: ["witness-logs", "witness-archive"], d1: [DB_ID, SHARD_ID], secrets: ["SIGNING_KEYS", "RECEIPT_SIGNING_KEYS"] }, ["--receipt-keys", file]);
    assert.equal(res.code, 0, res.err);
    assert.match(res.out, /^deploy:check: witness is ready: LOG_ORIGIN_HOST audit.acme.io, 3 D1 bindings, 2 R2 buckets, secrets SIGNING_KEYS, RECEIPT_SIGNING_KEYS\n$/);
  });

  it("refuses, one line each and exit 1: R2 not enabled (10042), a missing database, a missing secret, a broken receipt key", { timeout: 120_000 }, async () => {
    const res = await deployCheck({ r2: "disabled", d1: [DB_ID], secrets: ["SIGNING_KEYS"] }, [], { RECEIPT_SIGNING_KEYS: "2026-11-25:" });
    assert.equal(res.code, 1);
    const lines = res.err.trimEnd().split("\n");
    assert.deepEqual(lines.map((l) => l.replace(/:.*/, "")), Array(5).fill("deploy"), res.err);
    assert.match(lines[0], /^deploy:check: RECEIPT_SIGNING_KEYS entry 1 \(2026-11-25\) has no key after the id/);
    assert.match(lines[1], /^deploy:check: could not ask the account which R2 buckets exist: R2 is not enabled on this account \(error 10042\)/);
    assert.match(lines[2], new RegExp(`^deploy:check: D1 database ${SHARD_ID} \\(EVENTS_1: witness-events-1\\) does not exist in the account`));
    assert.match(lines[3], /^deploy:check: secret RECEIPT_SIGNING_KEYS is not set: npm run keys:receipt -- --file <a safe place> --put$/);
    assert.equal(lines[4], "deploy:check: 4 problems; witness was not deployed");
  });

  it("says it could not ask, and fails, when the API does not answer within the timeout", { timeout: 120_000 }, async () => {
    const res = await deployCheck("silent", [], { DEPLOY_CHECK_TIMEOUT_SECONDS: "4" });
    assert.equal(res.code, 1);
    for (const what of ["R2 buckets exist", "D1 databases exist", "secrets the Worker has"]) {
      assert.match(res.err, new RegExp(`^deploy:check: could not ask the account which ${what}: wrangler gave no answer within 4 s \\(no network\\?\\)`, "m"));
    }
    assert.ok(res.seconds < 30, `took ${res.seconds} s`);
  });
});
