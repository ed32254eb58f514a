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

/**
 * The Worker's Env as `wrangler types` wrote it (src/worker-configuration.d.ts): each member's
 * name, type and whether it is optional (wrangler marks `?` what only some environments bind).
 * Env may extend other interfaces of the file (wrangler 4: __BaseEnv_Env; wrangler 3:
 * Cloudflare.Env); only the generated part before the runtime types is read.
 */
export function parseEnvTypes(text, name = "Env") {
  const head = String(text).split("// Begin runtime types")[0];
  const interfaces = new Map();
  const header = /\binterface\s+([\w$]+)(?:\s+extends\s+([^{]+))?\s*\{/g;
  for (let m; (m = header.exec(head)); ) {
    let depth = 1;
    let end = header.lastIndex;
    while (end < head.length && depth > 0) {
      if (head[end] === "{") depth++;
      else if (head[end] === "}") depth--;
      end++;
    }
    const members = [];
    for (const line of head.slice(header.lastIndex, end - 1).split("\n")) {
      const member = /^\s*(?:"((?:[^"\\]|\\.)*)"|([A-Za-z_$][\w$]*))(\?)?\s*:\s*(.+?);?\s*$/.exec(line);
      if (member) members.push({ name: member[1] ?? member[2], optional: member[3] === "?", type: member[4].trim() });
    }
    const bases = (m[2] ?? "").split(",").map((b) => b.trim().split(".").pop()).filter(Boolean);
    const seen = interfaces.get(m[1]) ?? { members: [], bases: [] };
    interfaces.set(m[1], { members: [...seen.members, ...members], bases: [...seen.bases, ...bases] });
  }
  const out = new Map();
  const visit = (which, path) => {
    const found = interfaces.get(which);
    if (!found || path.includes(which)) return;
    for (const base of found.bases) visit(base, [...path, which]);
    for (const member of found.members) out.set(member.name, member);
  };
  visit(name, []);
  return [...out.values()];
}

/**
 * Where wrangler.toml declares a binding of each type `wrangler types` writes (its
 * collectCoreBindings): the section and the field holding the name. Fetcher has several homes.
 */
const BINDING_SECTIONS = [
  [/^D1Database$/, "[[d1_databases]]", "binding"],
  [/^DurableObjectNamespace\b/, "[[durable_objects.bindings]]", "name"],
  [/^R2Bucket$/, "[[r2_buckets]]", "binding"],
  [/^Workflow\b/, "[[workflows]]", "binding"],
  [/^KVNamespace$/, "[[kv_namespaces]]", "binding"],
  [/^SendEmail$/, "[[send_email]]", "name"],
  [/^Queue\b/, "[[queues.producers]]", "binding"],
  [/^Hyperdrive$/, "[[hyperdrive]]", "binding"],
  [/^VectorizeIndex$/, "[[vectorize]]", "binding"],
  [/^AnalyticsEngineDataset$/, "[[analytics_engine_datasets]]", "binding"],
  [/^DispatchNamespace$/, "[[dispatch_namespaces]]", "binding"],
  [/^RateLimit$/, "[[ratelimits]]", "name"],
  [/^SecretsStoreSecret$/, "[[secrets_store_secrets]]", "binding"],
  [/^Ai$/, "[ai]", "binding"],
  [/^BrowserRun$/, "[browser]", "binding"],
  [/^ImagesBinding$/, "[images]", "binding"],
  [/^WorkerVersionMetadata$/, "[version_metadata]", "binding"],
  [/^(Service\b|Fetcher\b)/, "[[services]] (or another Fetcher: [assets], [[mtls_certificates]], [[vpc_services]])", "binding"],
];

/** Every name the resolved configuration binds, whatever its kind: a section's `binding`, else its `name`. */
function boundNames(config) {
  const names = new Set([...Object.keys(config.vars ?? {}), ...(config.secrets?.required ?? [])]);
  const add = (item) => {
    const name = item?.binding ?? item?.name;
    if (typeof name === "string") names.add(name);
  };
  for (const [key, value] of Object.entries(config)) {
    if (["vars", "secrets", "define", "alias", "migrations", "routes", "dev", "build", "rules"].includes(key)) continue;
    if (Array.isArray(value)) value.forEach(add);
    else if (value && typeof value === "object") {
      if (typeof value.binding === "string") names.add(value.binding);
      for (const list of [value.bindings, value.producers]) if (Array.isArray(list)) list.forEach(add);
    }
  }
  for (const key of ["data_blobs", "text_blobs", "wasm_modules"]) for (const name of Object.keys(config[key] ?? {})) names.add(name);
  if (config.logfwdr?.bindings?.length) names.add("LOGFWDR_SCHEMA"); // wrangler types' one name for them all
  return names;
}

/** A value wrangler types writes for a var or secret: string (or its literal, --strict-vars), number, boolean, object, an array. */
const VALUE_TYPE = /^(string|number|boolean|object|unknown)\b|^["'{[(\d-]|^(true|false|null)$|\[\]$/;

/**
 * What the configuration lacks of the Env the Worker's code is typed against: every binding
 * wrangler types declared (required in every environment, so not `?`) must be in the section
 * that declares it; every documented secret (SECRET_RECIPES) in [secrets] required, never in
 * [vars]. A var missing from [vars] is no problem: the Worker reads each with a default
 * (LOG_ORIGIN_HOST, which has none, is configProblems' own); `defaults` names them.
 */
export function bindingProblems(config, members, { env } = {}) {
  const problems = [];
  const defaults = [];
  const bound = boundNames(config);
  // An environment's own sections: wrangler does not inherit bindings, vars or secrets into one.
  const section = (name) => (env ? name.replace(/^(\[+)/, `$1env.${env}.`) : name);
  const required = new Set(config.secrets?.required ?? []);
  for (const { name, type, optional } of members) {
    if (optional) continue;
    if (Object.hasOwn(SECRET_RECIPES, name)) {
      if (Object.hasOwn(config.vars ?? {}, name)) problems.push(`${name} is a secret, but wrangler.toml sets it in ${section("[vars]")}, in plain text: delete it there and list it in ${section("[secrets]")} required`);
      else if (!required.has(name)) problems.push(`secret ${name} is missing from wrangler.toml ${section("[secrets]")} required: the Worker's Env declares it, and only the listed secrets are checked before a deploy`);
      continue;
    }
    if (bound.has(name)) continue;
    const home = BINDING_SECTIONS.find(([pattern]) => pattern.test(type));
    if (home) {
      problems.push(`${name} (${type.replace(/<.*$/, "")}) is not bound: the Worker's Env declares it, but wrangler.toml has no ${section(home[1])} with ${home[2]} = "${name}"`);
    } else if (VALUE_TYPE.test(type)) {
      if (name !== "LOG_ORIGIN_HOST") defaults.push(name);
    } else {
      problems.push(`${name} (${type}) is not bound: the Worker's Env declares it, but wrangler.toml${env ? ` [env.${env}]` : ""} binds nothing of that name`);
    }
  }
  return { problems, defaults };
}

/** What src/worker-configuration.d.ts says, or the one line saying why it cannot be read. */
export function envMembersOf(text) {
  const members = parseEnvTypes(text);
  if (members.length === 0) throw new Error("it declares no Env members: run npm run types");
  return members;
}

/**
 * The first line of wrangler.toml each configuration path (`vars`, `r2_buckets[1]`,
 * `env.production.d1_databases[0].binding`) is written on, from the text alone: where to point
 * wrangler's validation messages, which name a path but no line.
 */
export function tomlPathLines(text) {
  const lines = new Map();
  const counts = new Map();
  const set = (path, line) => lines.has(path) || lines.set(path, line);
  const KEY = String.raw`(?:"(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)`;
  const keyParts = (key) => [...key.matchAll(new RegExp(KEY, "g"))].map((k) => k[0].replace(/^["']|["']$/g, ""));
  let table = "";
  let closing = null;
  String(text).split(/\r?\n/).forEach((raw, i) => {
    const n = i + 1;
    if (closing) {
      if (raw.includes(closing)) closing = null;
      return;
    }
    const line = raw.trim();
    let m;
    if ((m = new RegExp(String.raw`^\[\[\s*(${KEY}(?:\s*\.\s*${KEY})*)\s*\]\]`).exec(line))) {
      const parts = keyParts(m[1]);
      parts.forEach((_, k) => set(parts.slice(0, k + 1).join("."), n));
      const path = parts.join(".");
      const index = counts.get(path) ?? 0;
      counts.set(path, index + 1);
      table = `${path}[${index}]`;
      set(table, n);
    } else if ((m = new RegExp(String.raw`^\[\s*(${KEY}(?:\s*\.\s*${KEY})*)\s*\]`).exec(line))) {
      const parts = keyParts(m[1]);
      parts.forEach((_, k) => set(parts.slice(0, k + 1).join("."), n));
      table = parts.join(".");
    } else if ((m = new RegExp(String.raw`^(${KEY}(?:\s*\.\s*${KEY})*)\s*=\s*(.*)$`).exec(line))) {
      const parts = keyParts(m[1]);
      parts.forEach((_, k) => set([table, ...parts.slice(0, k + 1)].filter(Boolean).join("."), n));
      const value = m[2];
      for (const delimiter of ['"""', "'''"]) {
        if (value.startsWith(delimiter) && !value.slice(3).includes(delimiter)) closing = delimiter;
      }
    }
  });
  return lines;
}

/** The line a configuration path is on: the path's own, else its nearest written parent's. */
function lineOf(lines, path) {
  for (let p = path; p; p = p.replace(/(\[\d+\]|\.[^.[]+|^[^.[]+)$/, "")) {
    if (lines.has(p)) return lines.get(p);
  }
  return null;
}

/** A clearer reason for smol-toml's commonest messages, from the line they point at. */
function tomlReason(reason, lineText, column) {
  const text = lineText ?? "";
  if (/^control characters are not allowed in strings$/.test(reason) && column >= text.trimEnd().length) return "unterminated string: it runs to the end of the line without its closing quote";
  if (/^(illegal character in key|incomplete key-value: cannot find end of key|unexpected end of key)$/.test(reason) && !/^\s*\[/.test(text) && !text.includes("=")) return `expected "=" after the key (${reason})`;
  if (/^trying to redefine/.test(reason)) {
    const table = /^\s*(\[\[?[^\]]+\]\]?)/.exec(text)?.[1];
    const key = /^\s*([^=\s[][^=]*?)\s*=/.exec(text)?.[1];
    if (table || key) return `${table ? `table ${table}` : `key ${key}`} is defined a second time (${reason})`;
  }
  if (/^(expected comma or end of structure|unfinished array|unfinished table)$/.test(reason) && text.trim() === "") return `${reason}: an array or inline table is still open at the end of the file`;
  if (reason === "invalid value") {
    const value = text.slice(text.indexOf("=") + 1).trim();
    if (/^[A-Za-z_]/.test(value) && !/^(true|false|inf|nan)\b/.test(value)) return `invalid value ${value.split(/\s/)[0]}: text must be quoted ("...")`;
  }
  return reason;
}

/**
 * wrangler's refusal to read a configuration as one line per problem, each naming its reason and,
 * when it can be found, its line: `wrangler.toml line 12: expected "=" after the key`. A TOML
 * syntax error carries its line; a validation error names a path, looked up in the text.
 */
export function configErrorLines(error, { file, text }) {
  const message = String(error?.message ?? error ?? "");
  const location = error?.location;
  if (location && typeof location.line === "number") {
    const reason = tomlReason(String(error.text ?? message.split("\n")[0]).replace(/^Invalid TOML document:\s*/, ""), location.lineText, location.column ?? 0);
    const column = typeof location.column === "number" && location.lineText ? `, column ${location.column + 1}` : "";
    return [`${file} line ${location.line}${column}: ${reason}`];
  }
  const items = [...message.matchAll(/^([ \t]*)- (.*)$/gm)].map((m) => ({ indent: m[1].length, text: m[2].trim() }));
  if (!/^Processing .* configuration:/.test(message) || items.length === 0) {
    return [`${file}: ${message.split("\n").map((l) => l.trim()).filter(Boolean).join(" ") || "wrangler could not read it, without saying why"}`];
  }
  const lines = text === undefined ? new Map() : tomlPathLines(text);
  const out = [];
  const PATH = /^(?:Expected |The field )?"([^"]+)"/;
  items.forEach((item, i) => {
    if (items[i + 1] && items[i + 1].indent > item.indent) return; // a heading: its children say what is wrong
    const parent = items.slice(0, i).reverse().find((p) => p.indent < item.indent);
    const own = PATH.exec(item.text)?.[1];
    const parentPath = parent && PATH.exec(parent.text)?.[1];
    let path = own ?? parentPath;
    const field = /should have a \w+ "([^"]+)" field/.exec(item.text)?.[1];
    if (path && field) path = `${path}.${field}`;
    const prefix = !own && parent && parentPath ? `"${parentPath}": ` : "";
    const line = path ? lineOf(lines, path) : null;
    out.push(`${file}${line ? ` line ${line}` : ""}: ${prefix}${item.text.replace(/\.$/, "")}`);
  });
  return out;
}
