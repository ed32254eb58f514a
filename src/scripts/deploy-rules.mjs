// What npm run deploy:check refuses, as pure functions over the resolved configuration
// (wrangler's own reading of wrangler.toml) and over what wrangler answered about the account,
// so each refusal is testable without a network. Each problem is one line.
import { createPrivateKey } from "node:crypto";

const KID = /^[A-Za-z0-9._-]{1,64}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** wrangler.toml's own ids (00000000-0000-0000-0000-00000000000n): no account has them. */
const isRealId = (id) => UUID.test(id ?? "") && !/^0{8}-0{4}-0{4}-0{4}-0{8}/.test(id);
const LOCAL_HOST = /^(localhost|127(\.\d{1,3}){3}|0\.0\.0\.0|\[?::1\]?|[^/]*\.localhost)(:\d+)?$/i;
/** Names reserved for examples and tests (RFC 2606, RFC 6761): a copied README value, never a deployment. */
const EXAMPLE_HOST = /(^|\.)(example\.(com|net|org)|test|invalid|local)(:\d+)?$/i;

/** The secrets a deployment needs: wrangler.toml's [secrets] required, the one list (wrangler types reads it too). */
export function requiredSecrets(config) {
  return [...(config.secrets?.required ?? [])];
}

/** The host a route pattern serves: `witness.example.com/*` -> witness.example.com. */
function routeHost(route) {
  const pattern = typeof route === "string" ? route : (route?.pattern ?? "");
  return pattern.replace(/^https?:\/\//, "").split("/")[0].toLowerCase();
}

function hostMatches(pattern, host) {
  if (pattern.startsWith("*")) return host.endsWith(pattern.slice(1)) || host === pattern.slice(2);
  return pattern === host;
}

/** Problems the configuration alone shows: LOG_ORIGIN_HOST, placeholder database ids. */
export function configProblems(config) {
  const problems = [];
  const host = String(config.vars?.LOG_ORIGIN_HOST ?? "").trim();
  const routes = [...(config.routes ?? []), ...(config.route ? [config.route] : [])].map(routeHost).filter(Boolean);
  if (host === "") {
    problems.push("LOG_ORIGIN_HOST is empty: set it in wrangler.toml [vars] to the public host the Worker will answer on (it names every log and can never change)");
  } else if (/[/\s]/.test(host) || /^[a-z]+:/i.test(host.replace(/:\d+$/, ""))) {
    problems.push(`LOG_ORIGIN_HOST ${JSON.stringify(host)} is not a bare host name: no scheme, path or spaces, like witness.example.org`);
  } else if (LOCAL_HOST.test(host)) {
    problems.push(`LOG_ORIGIN_HOST is ${host}, the local default: set it to the production host before the first deploy (it names every log and can never change)`);
  } else if (EXAMPLE_HOST.test(host)) {
    problems.push(`LOG_ORIGIN_HOST is ${host}, a name reserved for examples: set it to the host you chose for the deployment`);
  } else if (routes.length > 0 && !routes.some((r) => hostMatches(r, host.toLowerCase()))) {
    problems.push(`LOG_ORIGIN_HOST is ${host}, but wrangler.toml routes the Worker only to ${routes.join(", ")}: logs must be named after a host that serves them`);
  } else if (routes.length === 0 && !host.toLowerCase().endsWith(".workers.dev")) {
    problems.push(`LOG_ORIGIN_HOST is ${host}, but wrangler.toml routes nothing there: add routes = [{ pattern = "${host}", custom_domain = true }] (or use the workers.dev host)`);
  }
  for (const db of d1Databases(config)) {
    const id = db.database_id;
    const [which, has] = db.binding.includes(",") ? [`D1 bindings ${db.binding} (${db.database_name})`, "have"] : [`D1 binding ${db.binding} (${db.database_name})`, "has"];
    if (!id) problems.push(`${which} ${has} no database_id: npx wrangler d1 create ${db.database_name}, then put the id it prints in wrangler.toml`);
    else if (!isRealId(id)) {
      problems.push(`${which} ${has} the placeholder id ${id}: npx wrangler d1 create ${db.database_name}, then put the id it prints in wrangler.toml${oneDatabaseHint(db)}`);
    }
  }
  return problems;
}

/** Bindings of one database (DB and EVENTS_0 name the same) as one entry: `DB, EVENTS_0`. */
function d1Databases(config) {
  const byDatabase = new Map();
  for (const db of config.d1_databases ?? []) {
    const key = `${db.database_name}\n${db.database_id ?? ""}`;
    const seen = byDatabase.get(key);
    byDatabase.set(key, seen ? { ...seen, binding: `${seen.binding}, ${db.binding}`, shardOnly: false } : { ...db, shardOnly: /^EVENTS_[1-9]\d*$/.test(db.binding) });
  }
  return [...byDatabase.values()];
}

const oneDatabaseHint = (db) => (db.shardOnly ? ` (or, for one database, delete the ${db.binding} block)` : "");

/**
 * RECEIPT_SIGNING_KEYS as the Worker reads it (src/sealing/receipt-signing.ts):
 * `<kid>:<base64url PKCS#8 Ed25519 private key>` entries, comma-separated; the last signs.
 */
export function receiptKeysProblems(value) {
  const entries = String(value ?? "").split(",").map((e) => e.trim()).filter(Boolean);
  if (entries.length === 0) return ["RECEIPT_SIGNING_KEYS is empty: generate one with npm run keys:receipt"];
  const problems = [];
  entries.forEach((entry, i) => {
    const colon = entry.indexOf(":");
    const kid = colon === -1 ? entry : entry.slice(0, colon);
    const key = colon === -1 ? "" : entry.slice(colon + 1);
    // Never the key itself in a message: without a colon, the "id" is the key.
    const which = `RECEIPT_SIGNING_KEYS entry ${i + 1}${colon > 0 && KID.test(kid) ? ` (${kid})` : ""}`;
    if (colon < 1 || !KID.test(kid)) return problems.push(`${which} is not <key id>:<base64url PKCS#8>: the id is 1-64 letters, digits, '.', '_' or '-'`);
    if (key === "") return problems.push(`${which} has no key after the id (a failed generator leaves just "${kid}:"): use npm run keys:receipt`);
    if (!/^[A-Za-z0-9_-]+$/.test(key)) return problems.push(`${which} is not base64url (only A-Z a-z 0-9 - _, no padding)`);
    let type;
    try {
      type = createPrivateKey({ key: Buffer.from(key, "base64url"), format: "der", type: "pkcs8" }).asymmetricKeyType;
    } catch {
      return problems.push(`${which} is not a PKCS#8 private key: use npm run keys:receipt`);
    }
    if (type !== "ed25519") problems.push(`${which} is a ${type} key, not Ed25519: use npm run keys:receipt`);
  });
  return problems;
}

/** What the account lacks of what the configuration names. An answer {error} becomes one "could not ask" line, never a pass. */
export function accountProblems(config, { buckets, databases, secrets }) {
  const problems = [];
  const r2 = config.r2_buckets ?? [];
  if (r2.length > 0) {
    if (buckets.error) problems.push(`could not ask the account which R2 buckets exist: ${buckets.error}`);
    else {
      for (const b of r2) {
        if (!buckets.names.has(b.bucket_name)) problems.push(`R2 bucket ${b.bucket_name} (binding ${b.binding}) does not exist in the account: npx wrangler r2 bucket create ${b.bucket_name}${b.jurisdiction ? ` -J ${b.jurisdiction}` : ""}`);
      }
    }
  }
  const d1 = d1Databases(config).filter((db) => isRealId(db.database_id));
  if (d1.length > 0) {
    if (databases.error) problems.push(`could not ask the account which D1 databases exist: ${databases.error}`);
    else {
      for (const db of d1) {
        if (!databases.ids.has(db.database_id)) problems.push(`D1 database ${db.database_id} (${db.binding}: ${db.database_name}) does not exist in the account: npx wrangler d1 create ${db.database_name}, then put its id in wrangler.toml${oneDatabaseHint(db)}`);
      }
    }
  }
  const required = requiredSecrets(config);
  if (required.length > 0) {
    if (secrets.error) problems.push(`could not ask the account which secrets the Worker has: ${secrets.error}`);
    else {
      for (const name of required) if (!secrets.names.has(name)) problems.push(`secret ${name} is not set: ${SECRET_RECIPES[name] ?? `npx wrangler secret put ${name}`}`);
    }
  }
  return problems;
}

const RANDOM = `node -e "console.log(require('crypto').randomBytes(32).toString('base64url'))"`;
/** How to make each secret of wrangler.toml's list (README, Deploying). */
export const SECRET_RECIPES = {
  SIGNING_KEYS: `echo "1:$(${RANDOM})" | npx wrangler secret put SIGNING_KEYS`,
  EMBED_TOKEN_SECRET: `${RANDOM} | npx wrangler secret put EMBED_TOKEN_SECRET`,
  STREAM_SECRETS_KEY: `${RANDOM} | npx wrangler secret put STREAM_SECRETS_KEY`,
  RECEIPT_SIGNING_KEYS: "npm run keys:receipt -- --file <a safe place> --put",
};

/** Why wrangler gave no answer, in one clause, from its output. */
export function whyNoAnswer(raw, { timedOut = false, seconds = 0 } = {}) {
  const output = String(raw ?? "").replace(/\x1b\[[0-9;]*m/g, "");
  if (timedOut) return `wrangler gave no answer within ${seconds} s (no network?); nothing was checked against the account`;
  if (/10042/.test(output)) return "R2 is not enabled on this account (error 10042): enable it in the dashboard (R2 Object Storage) first";
  if (/CLOUDFLARE_API_TOKEN|not authenticated|wrangler login|Not logged in/i.test(output)) return "not logged in: npx wrangler login, or set CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID";
  if (/Unable to resolve Cloudflare's API|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|fetch failed/i.test(output)) return "no network (the Cloudflare API did not answer)";
  const line = output.split("\n").map((l) => l.replace(/^[✘X▲\s[\]A-Z]*ERROR\]?\s*/, "").trim()).find((l) => l && !/wrangler \d|^[─-]+$|^🪵|Logs were written/.test(l));
  return line ? line.slice(0, 200) : "wrangler failed without saying why";
}

/** `wrangler r2 bucket list` prints `name: <bucket>` blocks. */
export function parseBucketList(output) {
  return { names: new Set([...output.matchAll(/^name:\s+(\S+)\s*$/gm)].map((m) => m[1])) };
}

/** `wrangler d1 list --json`: [{uuid, name, ...}]. */
export function parseDatabaseList(output) {
  const list = JSON.parse(output.slice(output.indexOf("[")));
  return { ids: new Set(list.map((d) => d.uuid)) };
}

/** `wrangler secret list --format json`: [{name, type}]. A Worker not created yet (10007) has none. */
export function parseSecretList(output) {
  if (/\b10007\b|does not exist on your account/i.test(output)) return { names: new Set() };
  const list = JSON.parse(output.slice(output.indexOf("[")));
  return { names: new Set(list.map((s) => s.name)) };
}
