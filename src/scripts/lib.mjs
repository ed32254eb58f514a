// Shared helpers of the operator scripts (plain Node, run through npm scripts on Node 22).
import { spawnSync } from "node:child_process";
import { createHash, randomInt } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";

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

/** Runs SQL against the local D1 (or the deployed one with --remote) and returns the rows. */
export function sql(command, where = {}) {
  const out = wrangler(["d1", "execute", DB_NAME, ...target(where), "--json", "--command", command], { quiet: true });
  const parsed = JSON.parse(out.slice(out.indexOf("[")));
  return parsed.flatMap((r) => r.results ?? []);
}

export function quote(value) {
  return value === null ? "NULL" : `'${String(value).replaceAll("'", "''")}'`;
}

export function applyMigrations(where = {}) {
  wrangler(["d1", "migrations", "apply", DB_NAME, ...target(where)], { quiet: true });
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

/** Creates the project when missing and a new key for it; only the secret's hash is stored. */
export function createKey(projectId, where = {}) {
  const prefix = randomAlphanumeric(12);
  const secret = randomAlphanumeric(32);
  const secretHash = createHash("sha256").update(secret).digest("hex");
  const now = new Date().toISOString();
  sql(
    `INSERT OR IGNORE INTO projects (id, created_at) VALUES (${quote(projectId)}, ${quote(now)}); ` +
      `INSERT INTO api_keys (prefix, project_id, secret_hash, created_at) VALUES (${quote(prefix)}, ${quote(projectId)}, ${quote(secretHash)}, ${quote(now)});`,
    where,
  );
  return { key: `wtn_live_${prefix}_${secret}`, prefix };
}

export function parseArgs(argv) {
  const flags = new Set(argv.filter((a) => a.startsWith("--")));
  return { remote: flags.has("--remote"), positional: argv.filter((a) => !a.startsWith("--")) };
}

export { existsSync };
