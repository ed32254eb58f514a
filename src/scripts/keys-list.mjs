// npm run keys:list -- <project> [--remote]: a project's keys (prefix, scopes, created, expires,
// revoked, label). Read-only; only a hash of each secret is stored, so no secret can be shown.
import { checkProjectId, fail, parseCommand, quote, sql } from "./lib.mjs";

const USAGE = `usage: npm run keys:list -- <project> [--remote]
  --remote  the deployed database (default: the local one of npm run dev)`;

const { flags, positional } = parseCommand(process.argv.slice(2), { usage: USAGE, flags: ["--remote"], min: 1 });
const remote = flags.has("--remote");
const project = checkProjectId(positional[0]);
const rows = sql(
  `SELECT p.id AS project, k.prefix, k.scopes, k.label, k.created_at, k.expires_at, k.revoked_at ` +
    `FROM projects p LEFT JOIN api_keys k ON k.project_id = p.id WHERE p.id = ${quote(project)} ORDER BY k.created_at, k.prefix`,
  { remote },
);
if (rows.length === 0) fail(`no project ${project}; create it with npm run keys:create -- ${project}`);
const now = new Date().toISOString();
const keys = rows.filter((r) => r.prefix !== null);
const live = keys.filter((k) => !k.revoked_at && !(k.expires_at && k.expires_at <= now)).length;
console.log(`Project ${project}: ${keys.length} key(s), ${live} live`);
if (keys.length > 0) {
  // Labels set through POST /v1/keys may hold anything: nothing reaches the terminal as a control character.
  const shown = (label) => (label ?? "-").replace(/\p{Cc}/gu, "?");
  const table = [
    ["prefix", "scopes", "created", "expires", "revoked", "label"],
    ...keys.map((k) => [k.prefix, k.scopes, k.created_at, k.expires_at ?? "never", k.revoked_at ?? "-", shown(k.label)]),
  ];
  const widths = table[0].map((_, i) => Math.max(...table.map((r) => r[i].length)));
  for (const r of table) console.log(`  ${r.map((cell, i) => cell.padEnd(widths[i])).join("  ")}`.trimEnd());
}
