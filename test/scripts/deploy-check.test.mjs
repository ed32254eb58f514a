// npm run deploy:check and npm run keys:receipt: every refusal, as pure rules over wrangler's own
// reading of a configuration text, over the Worker's Env (src/worker-configuration.d.ts) and over
// the account's answers (no network), then the script end to end: malformed files (reason and
// line, never a stack), a binding the Worker needs and wrangler.toml lacks, and against a
// stand-in Cloudflare API (wrangler's CLOUDFLARE_API_BASE_URL): answers, a missing R2 (10042)
// and a silent API (the check says it could not ask, within its timeout).
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { generateKeyPairSync, webcrypto } from "node:crypto";
import { createServer } from "node:http";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { unstable_readConfig } from "wrangler";
import {
  accountProblems, bindingProblems, configErrorLines, configProblems, parseEnvTypes, receiptKeysProblems, requiredSecrets, SECRET_RECIPES, whyNoAnswer,
} from "../../src/scripts/deploy-rules.mjs";

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
/** The repository's own wrangler.toml, filled in as for a first deploy: host, route, real database ids. */
const PROD = readFileSync(join(ROOT, "wrangler.toml"), "utf8")
  .replace(/^main = .*$/m, (main) => `${main}\nroutes = [{ pattern = "audit.acme.io", custom_domain = true }]`)
  .replace('LOG_ORIGIN_HOST = "localhost:8787"', 'LOG_ORIGIN_HOST = "audit.acme.io"')
  .replaceAll("00000000-0000-0000-0000-000000000000", DB_ID)
  .replaceAll("00000000-0000-0000-0000-000000000001", SHARD_ID);
const ENV_TYPES = parseEnvTypes(readFileSync(join(ROOT, "src/worker-configuration.d.ts"), "utf8"));
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

describe("deploy:check: the bindings the Worker declares (src/worker-configuration.d.ts)", () => {
  const prod = configOf(PROD);
  /** The repository's configuration without one [[section]] block: the block whose lines include `line`. */
  const without = (line) => {
    const blocks = PROD.split(/\n(?=\[)/);
    const kept = blocks.filter((b) => !b.split("\n").includes(line));
    assert.equal(kept.length, blocks.length - 1, `no block with ${line}`);
    return kept.join("\n");
  };

  it("reads wrangler types' Env: every binding, its type, optional or not", () => {
    const byName = new Map(ENV_TYPES.map((m) => [m.name, m]));
    assert.deepEqual(byName.get("ARCHIVE"), { name: "ARCHIVE", optional: false, type: "R2Bucket" });
    assert.equal(byName.get("DB").type, "D1Database");
    assert.match(byName.get("LEDGER").type, /^DurableObjectNamespace</);
    assert.match(byName.get("JOBS").type, /^Workflow</);
    assert.equal(byName.get("SIGNING_KEYS").type, "string");
    // Nothing from the runtime types after the Env (their interfaces have members too).
    assert.ok(!byName.has("fetch") && ENV_TYPES.length < 100, ENV_TYPES.map((m) => m.name).join());
    // wrangler 3's shape: members on Cloudflare.Env, the global Env extending it.
    const v3 = parseEnvTypes(`declare namespace Cloudflare {\n\tinterface Env {\n\t\tKV: KVNamespace;\n\t\t"odd-name"?: string;\n\t}\n}\ninterface Env extends Cloudflare.Env {}\n`);
    assert.deepEqual(v3, [{ name: "KV", optional: false, type: "KVNamespace" }, { name: "odd-name", optional: true, type: "string" }]);
  });

  it("the repository's wrangler.toml binds everything its Env declares, and every secret it declares has a recipe", () => {
    const own = unstable_readConfig({ config: join(ROOT, "wrangler.toml") }, { hideWarnings: true });
    assert.deepEqual(bindingProblems(own, ENV_TYPES), { problems: [], defaults: [] });
    assert.deepEqual(bindingProblems(prod, ENV_TYPES), { problems: [], defaults: [] });
    // deploy:check tells a secret from a var by SECRET_RECIPES: it must be exactly [secrets] required.
    assert.deepEqual(Object.keys(SECRET_RECIPES).sort(), [...own.secrets.required].sort());
  });

  it("refuses, naming the binding and the section it belongs in, each binding wrangler.toml lacks", () => {
    const cases = [
      ['binding = "ARCHIVE"', 'ARCHIVE (R2Bucket) is not bound: the Worker\'s Env declares it, but wrangler.toml has no [[r2_buckets]] with binding = "ARCHIVE"'],
      ['binding = "EVENTS_1"', 'EVENTS_1 (D1Database) is not bound: the Worker\'s Env declares it, but wrangler.toml has no [[d1_databases]] with binding = "EVENTS_1"'],
      ['name = "LEDGER"', 'LEDGER (DurableObjectNamespace) is not bound: the Worker\'s Env declares it, but wrangler.toml has no [[durable_objects.bindings]] with name = "LEDGER"'],
      ['binding = "JOBS"', 'JOBS (Workflow) is not bound: the Worker\'s Env declares it, but wrangler.toml has no [[workflows]] with binding = "JOBS"'],
    ];
    for (const [line, problem] of cases) assert.deepEqual(bindingProblems(configOf(without(line)), ENV_TYPES).problems, [problem]);
    const noSecret = configOf(PROD.replace(/^required = .*$/m, 'required = ["SIGNING_KEYS", "EMBED_TOKEN_SECRET", "STREAM_SECRETS_KEY"]'));
    assert.deepEqual(bindingProblems(noSecret, ENV_TYPES).problems, [
      "secret RECEIPT_SIGNING_KEYS is missing from wrangler.toml [secrets] required: the Worker's Env declares it, and only the listed secrets are checked before a deploy",
    ]);
    const plain = configOf(PROD.replace("[vars]\n", '[vars]\nSIGNING_KEYS = "1:abc"\n').replace(/^required = .*$/m, 'required = ["EMBED_TOKEN_SECRET", "RECEIPT_SIGNING_KEYS", "STREAM_SECRETS_KEY"]'));
    assert.deepEqual(bindingProblems(plain, ENV_TYPES).problems, [
      "SIGNING_KEYS is a secret, but wrangler.toml sets it in [vars], in plain text: delete it there and list it in [secrets] required",
    ]);
  });

  it("lets a var the Worker reads with a default go unset, and an optional (`?`) binding go unbound", () => {
    const { problems, defaults } = bindingProblems(configOf(PROD.replace(/^(METER|WITNESSES) = .*$/gm, "")), ENV_TYPES);
    assert.deepEqual(problems, []);
    assert.deepEqual(defaults.sort(), ["METER", "WITNESSES"]);
    const types = parseEnvTypes(`interface __BaseEnv_Env {\n\tDB: D1Database;\n\tCACHE?: KVNamespace;\n\tMODE: "a" | "b";\n}\ninterface Env extends __BaseEnv_Env {}\n`);
    assert.deepEqual(bindingProblems(configOf(PROD), types), { problems: [], defaults: ["MODE"] });
  });

  it("handles every kind wrangler types writes, send_email and KV included, and an environment's own sections", () => {
    const types = parseEnvTypes(`interface __BaseEnv_Env {
\tMAIL: SendEmail;
\tCACHE: KVNamespace;
\tQ: Queue;
\tAI: Ai;
\tAUTH: Fetcher /* auth-worker */;
\tTHING: SomethingNew;
}
interface Env extends __BaseEnv_Env {}
`);
    const lack = bindingProblems(configOf(PROD), types).problems;
    assert.deepEqual(lack, [
      'MAIL (SendEmail) is not bound: the Worker\'s Env declares it, but wrangler.toml has no [[send_email]] with name = "MAIL"',
      'CACHE (KVNamespace) is not bound: the Worker\'s Env declares it, but wrangler.toml has no [[kv_namespaces]] with binding = "CACHE"',
      'Q (Queue) is not bound: the Worker\'s Env declares it, but wrangler.toml has no [[queues.producers]] with binding = "Q"',
      'AI (Ai) is not bound: the Worker\'s Env declares it, but wrangler.toml has no [ai] with binding = "AI"',
      'AUTH (Fetcher /* auth-worker */) is not bound: the Worker\'s Env declares it, but wrangler.toml has no [[services]] (or another Fetcher: [assets], [[mtls_certificates]], [[vpc_services]]) with binding = "AUTH"',
      "THING (SomethingNew) is not bound: the Worker's Env declares it, but wrangler.toml binds nothing of that name",
    ]);
    const bound = `${PROD}
[[send_email]]
name = "MAIL"
[[kv_namespaces]]
binding = "CACHE"
id = "0123456789abcdef0123456789abcdef"
[[queues.producers]]
binding = "Q"
queue = "q"
[ai]
binding = "AI"
[[services]]
binding = "AUTH"
service = "auth-worker"
[[unsafe.bindings]]
name = "THING"
type = "something_new"
`;
    assert.deepEqual(bindingProblems(configOf(bound), types).problems, []);
    // [env.production] inherits no bindings: the refusal names the environment's own section.
    const withEnv = `${bound}\n[env.production]\nvars = { LOG_ORIGIN_HOST = "audit.acme.io" }\nsend_email = [{ name = "MAIL" }]\n`;
    assert.match(bindingProblems(configOf(withEnv, "production"), types, { env: "production" }).problems[0], /^CACHE \(KVNamespace\) is not bound: .* no \[\[env\.production\.kv_namespaces\]\] with binding = "CACHE"$/);
  });
});

describe("deploy:check: a wrangler.toml wrangler cannot read", () => {
  /** Each problem line for this text, from wrangler's own refusal to read it. */
  const linesFor = (text) => {
    const file = configFile(text);
    try {
      unstable_readConfig({ config: file }, { hideWarnings: true });
    } catch (error) {
      return configErrorLines(error, { file: "wrangler.toml", text });
    }
    assert.fail("wrangler read it");
  };

  it("names the reason and the line of each TOML syntax error", () => {
    const cases = [
      [`name = "witness"\n[vars]\nLOG_LEVEL = "debug\n`, "wrangler.toml line 3, column 19: unterminated string: it runs to the end of the line without its closing quote"],
      [`name = "witness"\nmain "src/index.ts"\n`, 'wrangler.toml line 2, column 6: expected "=" after the key (illegal character in key)'],
      [`name = "witness"\n[vars]\nA = "1"\n[vars]\nB = "2"\n`, "wrangler.toml line 4, column 2: table [vars] is defined a second time (trying to redefine an already defined table or value)"],
      [`name = "witness"\n[vars]\nA = "1"\nA = "2"\n`, "wrangler.toml line 4, column 1: key A is defined a second time (trying to redefine an already defined table or value)"],
      [`name = "witness"\ncompatibility_date = 2026-10-20\nworkers_dev = yes\n`, 'wrangler.toml line 3, column 15: invalid value yes: text must be quoted ("...")'],
      [`name = "witness"\ncompatibility_flags = ["nodejs_als"\n`, "wrangler.toml line 3: expected comma or end of structure: an array or inline table is still open at the end of the file"],
    ];
    for (const [text, line] of cases) assert.deepEqual(linesFor(text), [line]);
  });

  it("names the line of each setting wrangler refuses, one line each", () => {
    const text = `name = "witness"\nroutes = 5\ncompatibility_date = "2026-13-45"\n[[r2_buckets]]\nbucket_name = "witness-logs"\n[[durable_objects.bindings]]\nname = 1\nclass_name = "ProjectLedger"\n`;
    assert.deepEqual(linesFor(text), [
      'wrangler.toml line 2: Expected "routes" to be an array but got 5',
      'wrangler.toml line 3: "compatibility_date" field should be a valid ISO-8601 date (YYYY-MM-DD), but got "2026-13-45"',
      'wrangler.toml line 4: "r2_buckets[0]" bindings should have a string "binding" field but got {"bucket_name":"witness-logs"}',
      'wrangler.toml line 7: "durable_objects.bindings[0]": binding should have a string "name" field',
    ]);
  });
});

/** npm run deploy:check -- --offline on this configuration text (no receipt keys to check): exit code and output. */
function offlineCheck(text, args = []) {
  const { RECEIPT_SIGNING_KEYS, ...env } = process.env;
  const res = spawnSync(process.execPath, [join(ROOT, "src/scripts/deploy-check.mjs"), "--offline", "--config", configFile(text), ...args], {
    encoding: "utf8",
    env: { ...env, WRANGLER_SEND_METRICS: "false" },
  });
  return { code: res.status, out: res.stdout, err: res.stderr, last: `${res.stdout}${res.stderr}`.trimEnd().split("\n").at(-1) };
}

describe("npm run deploy:check --offline", () => {
  it("passes the repository's wrangler.toml filled in for a first deploy, ending on one OK line", { timeout: 60_000 }, () => {
    const res = offlineCheck(PROD);
    assert.equal(res.code, 0, res.err);
    assert.equal(res.err, "");
    assert.match(res.out, /^deploy:check: OK, witness is ready: LOG_ORIGIN_HOST audit\.acme\.io, every binding the Worker declares, 3 D1 bindings, 3 R2 buckets, secrets SIGNING_KEYS, EMBED_TOKEN_SECRET, RECEIPT_SIGNING_KEYS, STREAM_SECRETS_KEY; not checked: the account \(--offline\), the RECEIPT_SIGNING_KEYS value \(pass --receipt-keys <file>\)\n$/);
  });

  it("refuses a wrangler.toml without the ARCHIVE bucket, naming it and [[r2_buckets]]", { timeout: 60_000 }, () => {
    const res = offlineCheck(PROD.replace(/\[\[r2_buckets\]\]\nbinding = "ARCHIVE"\nbucket_name = "witness-archive"\n/, ""));
    assert.equal(res.code, 1);
    assert.equal(res.err, [
      'deploy:check: ARCHIVE (R2Bucket) is not bound: the Worker\'s Env declares it, but wrangler.toml has no [[r2_buckets]] with binding = "ARCHIVE"',
      "deploy:check: FAILED, 1 problem: witness was not deployed",
      "",
    ].join("\n"));
  });

  it("refuses a malformed file with its reason and line, exit 1, never a stack trace", { timeout: 60_000 }, () => {
    for (const [text, line] of [
      ['name = "witness\n', /line 1, column 16: unterminated string/],
      ['name = "witness"\nmain "src/index.ts"\n', /line 2, column 6: expected "=" after the key/],
      ['name = "witness"\n[vars]\n[vars]\n', /line 3, column 2: table \[vars\] is defined a second time/],
      ['name = "witness"\nworkers_dev = yes\n', /line 2, column 15: invalid value yes: text must be quoted/],
      ['name = "witness"\n[[r2_buckets]]\nbinding = 5\n', /line 3: "r2_buckets\[0\]" bindings should have a string "binding" field but got \{"binding":5\}$/m],
    ]) {
      const res = offlineCheck(text);
      assert.equal(res.code, 1, res.err);
      assert.match(res.err, /^deploy:check: \S+wrangler-\d+\.toml line \d+/);
      assert.match(res.err, line);
      assert.doesNotMatch(res.err, /^\s+at /m);
      assert.match(res.last, /^deploy:check: FAILED, 1 problem: \S+wrangler-\d+\.toml could not be read; nothing was checked or deployed$/);
    }
    const missing = spawnSync(process.execPath, [join(ROOT, "src/scripts/deploy-check.mjs"), "--offline", "--config", join(dir, "nowhere.toml")], { encoding: "utf8" });
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /nowhere\.toml does not exist\ndeploy:check: FAILED, 1 problem: nothing was checked or deployed\n$/);
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
    const child = spawn(process.execPath, [join(ROOT, "src/scripts/deploy-check.mjs"), "--config", configFile(PROD), ...args], {
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
    const res = await deployCheck({ r2: ["witness-exports", "witness-logs", "witness-archive"], d1: [DB_ID, SHARD_ID], secrets: Object.keys(SECRET_RECIPES) }, ["--receipt-keys", file]);
    assert.equal(res.code, 0, res.err);
    assert.match(res.out, /^deploy:check: OK, witness is ready: LOG_ORIGIN_HOST audit.acme.io, every binding the Worker declares, 3 D1 bindings, 3 R2 buckets, secrets SIGNING_KEYS, EMBED_TOKEN_SECRET, RECEIPT_SIGNING_KEYS, STREAM_SECRETS_KEY\n$/);
  });

  it("refuses, one line each and exit 1: R2 not enabled (10042), a missing database, a missing secret, a broken receipt key", { timeout: 120_000 }, async () => {
    const res = await deployCheck({ r2: "disabled", d1: [DB_ID], secrets: ["SIGNING_KEYS", "EMBED_TOKEN_SECRET", "STREAM_SECRETS_KEY"] }, [], { RECEIPT_SIGNING_KEYS: "2026-11-25:" });
    assert.equal(res.code, 1);
    const lines = res.err.trimEnd().split("\n");
    assert.deepEqual(lines.map((l) => l.replace(/:.*/, "")), Array(5).fill("deploy"), res.err);
    assert.match(lines[0], /^deploy:check: RECEIPT_SIGNING_KEYS entry 1 \(2026-11-25\) has no key after the id/);
    assert.match(lines[1], /^deploy:check: could not ask the account which R2 buckets exist: R2 is not enabled on this account \(error 10042\)/);
    assert.match(lines[2], new RegExp(`^deploy:check: D1 database ${SHARD_ID} \\(EVENTS_1: witness-events-1\\) does not exist in the account`));
    assert.match(lines[3], /^deploy:check: secret RECEIPT_SIGNING_KEYS is not set: npm run keys:receipt -- --file <a safe place> --put$/);
    assert.equal(lines[4], "deploy:check: FAILED, 4 problems: witness was not deployed");
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
