// npm run keys:revoke -- <prefix> [--remote]: the key stops working within 10 s (key lookups are cached that long).
import { fail, parseArgs, quote, sql } from "./lib.mjs";

const { remote, positional } = parseArgs(process.argv.slice(2));
const prefix = positional[0];
if (!prefix || !/^[A-Za-z0-9]{8,32}$/.test(prefix)) fail("usage: npm run keys:revoke -- <prefix>  (the part after wtn_live_)");
const rows = sql(
  `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ${quote(new Date().toISOString())}) WHERE prefix = ${quote(prefix)} RETURNING project_id, revoked_at`,
  { remote },
);
if (rows.length === 0) fail(`no key with prefix ${prefix}`);
console.log(`Revoked key ${prefix} of project ${rows[0].project_id} (at ${rows[0].revoked_at}); it stops working within 10 seconds.`);
