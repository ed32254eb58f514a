// npm run keys:revoke -- <key> [--remote]: the key stops working within 10 s (key lookups are cached that long).
// <key> is the whole key, the part after wtn_live_, or its 12-character prefix. It writes D1 only:
// the daily cron records the revocation in the project's chain (witness.key.revoked, src/auth/key-audit.ts).
import { createHash } from "node:crypto";
import { fail, parseCommand, parseKeyReference, quote, sql } from "./lib.mjs";

const USAGE = `usage: npm run keys:revoke -- <key> [--remote]
  <key>     the whole key (wtn_live_<prefix>_<secret>), the part after wtn_live_, or the prefix
            (npm run keys:list -- <project> shows the prefixes)
  --remote  in the deployed database (default: the local one of npm run dev)`;

const { flags, positional } = parseCommand(process.argv.slice(2), { usage: USAGE, flags: ["--remote"], min: 1 });
const remote = flags.has("--remote");
const ref = parseKeyReference(positional[0]);
if (!ref) fail(`${positional[0]} is not a Witness API key or key prefix\n${USAGE}`);
const [row] = sql(`SELECT project_id, secret_hash, revoked_at FROM api_keys WHERE prefix = ${quote(ref.prefix)}`, { remote });
if (!row) fail(`no key with prefix ${ref.prefix}${remote ? "" : " in the local database (--remote for the deployed one)"}`);
if (ref.secret !== null && createHash("sha256").update(ref.secret).digest("hex") !== row.secret_hash) {
  // Most likely a typo: revoking by prefix alone would hit a key the operator may not mean.
  fail(`the secret does not match key ${ref.prefix} of project ${row.project_id}; pass the prefix alone to revoke that key anyway`);
}
if (row.revoked_at) {
  console.log(`Key ${ref.prefix} of project ${row.project_id} was already revoked (at ${row.revoked_at}); nothing changed.`);
  process.exit(0);
}
const [done] = sql(
  `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ${quote(new Date().toISOString())}) WHERE prefix = ${quote(ref.prefix)} RETURNING revoked_at`,
  { remote },
);
console.log(`Revoked key ${ref.prefix} of project ${row.project_id} (at ${done.revoked_at}); it stops working within 10 seconds.`);
console.log("The revocation reaches the project's chain with the next daily cron (witness.key.revoked).");
