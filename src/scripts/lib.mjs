// Shared helpers of the operator scripts (plain Node, run through npm scripts on Node 22).
import { spawnSync } from "node:child_process";
import { createHash, randomInt } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { localD1File, pendingMigrations, runLocal, sqliteAvailable } from "./local-d1.mjs";
import { hotDaysSetting, newProjectValues, PROJECT_INSERT } from "../storage/project-row.ts";
import { PLACE_KEY_SQL } from "../model/row-keys.ts";

export const ROOT = new URL("../..", import.meta.url).pathname;
export const WRANGLER = join(ROOT, "node_modules", ".bin", "wrangler");
export const DB_NAME = "witness";
export const ENV = {
  ...process.env,
  // wrangler needs Node 22: the node@22 dev dependency first on PATH, even when run outside npm.
  PATH: `${join(ROOT, "node_modules", ".bin")}:${process.env.PATH}`,
  WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" };

export function fail(message) {
  console.error(`error: ${message}`);
  process.exit(1);
}

export function wrangler(args, { quiet = false } = {}) {
  const res = spawnSync(WRANGLER, args, { cwd: ROOT, env: ENV, encoding: "utf8", stdio: quiet ? "pipe" : "inherit" });
  if (res.status !== 0) {
    if (quiet) process.stderr.write(res.stdout + res.stderr);
    fail(`wrangler ${args.join(" ")} failed`);
  }
  return res.stdout ?? "";
}

/** Where a command runs: the deployed D1 (remote), or a local one (optionally under persistTo). */
function target({ remote = false, persistTo } = {}) {
  if (remote) return ["--remote"];
  return persistTo ? ["--local", "--persist-to", persistTo] : ["--local"];
}

/** Each [[header]] table of wrangler.toml, as a reader of its string fields (`key = "value"`; undefined when absent). */
function tomlTables(header) {
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
  return toml.split(`[[${header}]]`).slice(1).map((block) => (key) => new RegExp(`^${key}\\s*=\\s*"([^"]+)"`, "m").exec(block)?.[1]);
}

/** The bucket wrangler.toml binds as `binding` (wrangler's r2 commands take the bucket's name). */
export function r2BucketName(binding) {
  const name = tomlTables("r2_buckets").find((field) => field("binding") === binding)?.("bucket_name");
  return name ?? fail(`wrangler.toml binds no R2 bucket as ${binding}`);
}

/** Database name -> the id wrangler.toml gives it (the local copy's file is named by the id). */
function databaseIds() {
  const ids = new Map();
  for (const field of tomlTables("d1_databases")) {
    const name = field("database_name");
    if (name && !ids.has(name)) ids.set(name, { id: field("preview_database_id") ?? field("database_id") ?? field("binding"), migrations: field("migrations_dir") ?? "migrations" });
  }
  return ids;
}

const ready = new Map();
/**
 * The local database's SQLite file when a script may use it directly: local,
 * Node has node:sqlite, the file exists and has every migration. null: go
 * through wrangler (it creates and migrates a database the first time).
 */
function directFile(name, where) {
  if (where.remote || !sqliteAvailable) return null;
  const db = databaseIds().get(name);
  if (!db) return null;
  const file = localD1File(where.persistTo ? resolve(ROOT, where.persistTo) : join(ROOT, ".wrangler", "state"), db.id);
  if (file && !ready.has(file)) ready.set(file, pendingMigrations(file, join(ROOT, db.migrations)).length === 0);
  return file && ready.get(file) ? file : null;
}

/** Runs SQL against one database, local (directly when it can) or deployed (--remote), and returns the rows. */
export function dbSql(name, command, where = {}) {
  const file = directFile(name, where);
  if (file) {
    try {
      return runLocal(file, command);
    } catch (error) {
      fail(`${name} (local): ${error.message}`);
    }
  }
  const out = wrangler(["d1", "execute", name, ...target(where), "--json", "--command", command], { quiet: true });
  const parsed = JSON.parse(out.slice(out.indexOf("[")));
  return parsed.flatMap((r) => r.results ?? []);
}

/** Runs SQL against the control database (local, or the deployed one with --remote) and returns the rows. */
export function sql(command, where = {}) {
  return dbSql(DB_NAME, command, where);
}

export function quote(value) {
  return value === null ? "NULL" : `'${String(value).replaceAll("'", "''")}'`;
}

/** The distinct D1 databases wrangler.toml binds: the control database and every event shard. */
export function databaseNames() {
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
  return [...new Set([...toml.matchAll(/^database_name\s*=\s*"([^"]+)"/gm)].map((m) => m[1]))];
}

/** Shard number -> database name, from the EVENTS_<n> bindings in wrangler.toml. */
export function shardDatabases() {
  return new Map([...shardBindings()].map(([shard, db]) => [shard, db.name]));
}

/** Each event shard's database as wrangler.toml binds it (EVENTS_<n>): its name and id. */
export function shardBindings() {
  const shards = new Map();
  for (const field of tomlTables("d1_databases")) {
    const binding = /^EVENTS_(\d+)$/.exec(field("binding") ?? "");
    const name = field("database_name");
    if (binding && name) shards.set(Number(binding[1]), { name, id: field("database_id") ?? null });
  }
  return shards;
}

/**
 * The least-full shard: by the bytes D1 reports (size_after, given by the
 * deployed D1), or by event count where it reports none (a local database).
 * Ties go to the lowest number.
 */
/** A [vars] value of wrangler.toml (the scripts' view of the deployment's settings); null when absent. */
export function wranglerVar(name) {
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
  return new RegExp(`^${name}\\s*=\\s*"([^"]*)"`, "m").exec(toml)?.[1] ?? null;
}

/**
 * Where a new project goes, as the service decides (src/storage/shard-pressure.ts): the shard
 * with the most free bytes under its high-water mark (its own mark from the shards table, else
 * SHARD_HIGH_WATER_BYTES). Sizes: the local SQLite file, or what D1 reports after a query.
 */
export function leastFullShard(where = {}) {
  const markDefault = Number(wranglerVar("SHARD_HIGH_WATER_BYTES") || 8e9);
  const marks = new Map();
  if (sql("SELECT 1 AS ok FROM sqlite_master WHERE name = 'shards'", where).length > 0) {
    for (const r of sql("SELECT shard, high_water_bytes FROM shards", where)) if (r.high_water_bytes !== null) marks.set(r.shard, r.high_water_bytes);
  }
  const measured = [...shardDatabases()].sort((a, b) => a[0] - b[0]).map(([shard, name]) => {
    const file = directFile(name, where);
    let bytes;
    if (file) bytes = statSync(file).size;
    else {
      const out = wrangler(["d1", "execute", name, ...target(where), "--json", "--command", "SELECT 1"], { quiet: true });
      bytes = JSON.parse(out.slice(out.indexOf("[")))[0]?.meta?.size_after ?? 0;
    }
    return { shard, free: (marks.get(shard) ?? markDefault) - bytes };
  });
  if (measured.length === 0) fail("wrangler.toml binds no event database (EVENTS_0, EVENTS_1, ...)");
  return measured.reduce((best, m) => (m.free > best.free ? m : best)).shard;
}

/** DEFAULT_HOT_DAYS as the service reads it (src/storage/project-row.ts): a new project's hot window, null for all hot. */
function defaultHotDays() {
  return hotDaysSetting(wranglerVar("DEFAULT_HOT_DAYS")).days;
}

/** Every database gets the same migrations (shard 0 is the control database itself). */
export function applyMigrations(where = {}) {
  for (const name of databaseNames()) {
    if (directFile(name, where)) continue; // local and already up to date
    wrangler(["d1", "migrations", "apply", name, ...target(where)], { quiet: true });
    ready.clear();
  }
}

const ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
export function randomAlphanumeric(length) {
  let out = "";
  for (let i = 0; i < length; i++) out += ALPHANUMERIC[randomInt(62)];
  return out;
}

export function checkProjectId(id) {
  if (!id || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(id)) {
    fail("a project id is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit");
  }
  return id;
}

/** What a key may do (src/auth/scopes.ts): admin implies the other two. */
export const SCOPES = ["ingest", "read", "admin"];
/** Longest label, in characters (src/auth/key-store.ts MAX_LABEL_CHARS). */
export const MAX_LABEL_CHARS = 100;

/** `ingest,read` into ["ingest", "read"] (stored order, no duplicates); throws naming a word that is no scope. */
export function parseScopes(text) {
  const words = String(text).split(",").map((w) => w.trim());
  const unknown = words.find((w) => !SCOPES.includes(w));
  if (unknown !== undefined) throw new Error(`unknown scope ${JSON.stringify(unknown)}: scopes are ${SCOPES.join(", ")}, comma-separated`);
  return SCOPES.filter((s) => words.includes(s));
}

/** A label as keys:create takes it: trimmed, 1-100 characters, no control characters (it is printed to terminals). */
export function checkLabel(text) {
  const label = String(text).trim();
  if (label === "") throw new Error("--label must not be empty");
  // Counted as the keys API counts (UTF-16 code units), so both accept the same labels.
  if (label.length > MAX_LABEL_CHARS) throw new Error(`--label is at most ${MAX_LABEL_CHARS} characters (got ${label.length})`);
  if (/\p{Cc}/u.test(label)) throw new Error("--label must not contain control characters");
  return label;
}

/**
 * Creates the project when missing and a new key for it; only the secret's
 * hash is stored. scopes default to admin: the short-lived keys other scripts
 * mint to call the service need it (keys:create chooses its own default).
 * audit_state stays NULL: the daily cron records the key's creation in the
 * project's chain (src/auth/key-audit.ts), since a script writes D1 directly.
 */
export function createKey(projectId, where = {}, { scopes = ["admin"], label = null } = {}) {
  const prefix = randomAlphanumeric(12);
  const secret = randomAlphanumeric(32);
  const secretHash = createHash("sha256").update(secret).digest("hex");
  const now = new Date().toISOString();
  const exists = sql(`SELECT 1 AS ok FROM projects WHERE id = ${quote(projectId)}`, where).length > 0;
  const shard = exists ? 0 : leastFullShard(where);
  // The project's row as the worker makes it (src/storage/project-row.ts), its values written as literals for wrangler d1 execute.
  const values = newProjectValues(projectId, shard, defaultHotDays(), new Date(now)).map((v) => (v === null ? "NULL" : typeof v === "number" ? v : quote(v)));
  sql(
    `${PROJECT_INSERT.replace("(?, ?, ?, ?, ?)", `(${values.join(", ")})`)}; ` +
      `INSERT INTO api_keys (prefix, project_id, secret_hash, created_at, scopes, label) ` +
      `VALUES (${quote(prefix)}, ${quote(projectId)}, ${quote(secretHash)}, ${quote(now)}, ${quote(scopes.join(","))}, ${quote(label)});`,
    where,
  );
  // A new project's rows are keyed, as the worker places one (src/storage/projects.ts): its number in its shard first.
  if (!exists) dbSql(shardDatabases().get(shard), PLACE_KEY_SQL.replaceAll("?1", quote(projectId)), where);
  return { key: `wtn_live_${prefix}_${secret}`, prefix, scopes };
}

/**
 * Deletes a short-lived key a script minted to call the service (projects:retention, projects:move):
 * deleted, not revoked, so keys:list does not fill with dead keys; it stops working within 10 s
 * (isolates cache key lookups that long), after the script is done with it.
 */
export function deleteKey(prefix, where = {}) {
  sql(`DELETE FROM api_keys WHERE prefix = ${quote(prefix)}`, where);
}

export function parseArgs(argv) {
  const flags = new Set(argv.filter((a) => a.startsWith("--")));
  return { remote: flags.has("--remote"), positional: argv.filter((a) => !a.startsWith("--")) };
}

export { existsSync };

/**
 * Command-line parsing shared by the operator scripts: known boolean flags,
 * options with a value (`--url x` or `--url=x`), positionals; anything else,
 * or the wrong number of positionals, ends the script with its usage (exit 2).
 */
export function parseCommand(argv, { usage, flags = [], options = [], min = 0, max = min }) {
  const out = { flags: new Set(), options: {}, positional: [] };
  const bad = (message) => {
    console.error(`error: ${message}\n${usage}`);
    process.exit(2);
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--help" || arg === "-h") {
      console.log(usage);
      process.exit(0);
    }
    if (!arg.startsWith("--")) {
      out.positional.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq === -1 ? arg : arg.slice(0, eq);
    if (flags.includes(name) && eq === -1) out.flags.add(name);
    else if (options.includes(name)) {
      const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
      if (value === undefined || value === "" || (eq === -1 && value.startsWith("--"))) bad(`${name} needs a value`);
      out.options[name] = value;
    } else bad(`unknown option ${arg}`);
  }
  if (out.positional.length < min) bad(out.positional.length === 0 ? "missing argument" : `give at least ${min} arguments`);
  if (out.positional.length > max) bad(`unexpected argument ${out.positional[max]}`);
  return out;
}

/** Where `npm run dev` said it listens (it writes this file on start), so hints and --url defaults follow --port. */
export const DEV_URL_FILE = join(ROOT, ".wrangler", "dev-url");

/** The service's address: --url, else $WITNESS_URL, else the running `npm run dev`'s, else http://localhost:8787. */
export function serviceUrl(option) {
  const saved = existsSync(DEV_URL_FILE) ? readFileSync(DEV_URL_FILE, "utf8").trim() : "";
  const chosen = option ?? (process.env.WITNESS_URL || saved || "http://localhost:8787");
  try {
    if (!/^https?:$/.test(new URL(chosen).protocol)) throw new Error();
  } catch {
    fail(`${chosen} is not an http(s) address, like https://witness.example.com`);
  }
  return chosen.replace(/\/+$/, "");
}

/** The port `wrangler dev` will listen on: `--port 9000`, `--port=9000`, or its default 8787. */
export function devPort(args) {
  let port = "8787";
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--port") port = args[i + 1] ?? port;
    else if (args[i].startsWith("--port=")) port = args[i].slice("--port=".length);
  }
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) fail(`--port takes a port number, not ${port}`);
  return port;
}

/**
 * What `npm run dev` runs: wrangler dev with the dev-only vars, unless the
 * operator passes their own, and the logs named after the port it listens on.
 */
export function wranglerDevArgs(args) {
  const own = (name) => args.some((a) => a.startsWith(`${name}:`));
  const vars = [["LOG_ORIGIN_HOST", `localhost:${devPort(args)}`], ["EMBED_DEMO_PROJECT", "demo"], ["ALLOW_PRIVATE_STREAM_TARGETS", "true"]];
  return ["dev", "--test-scheduled", ...vars.filter(([name]) => !own(name)).flatMap(([name, value]) => ["--var", `${name}:${value}`]), ...args];
}

/**
 * Which key an operator means: the whole key (wtn_live_<prefix>_<secret>), the
 * part after wtn_live_ (<prefix>_<secret>), or the prefix alone. null when it is none of them.
 */
export function parseKeyReference(text) {
  const m = /^(?:wtn_live_)?([A-Za-z0-9]{8,32})(?:_([A-Za-z0-9]{22,64}))?$/.exec(String(text ?? "").trim());
  return m ? { prefix: m[1], secret: m[2] ?? null } : null;
}
