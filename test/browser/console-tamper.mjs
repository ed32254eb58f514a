// A real tamper for the browser tests: an event row changed in the dev server's
// own local D1 file (run.mjs passes its --persist-to directory as WITNESS_STATE),
// as someone with write access to the database would, bypassing the service.
import assert from "node:assert/strict";
import { createKey, dbSql, quote, shardDatabases } from "../../src/scripts/lib.mjs";

const STATE = process.env.WITNESS_STATE;

/** Sets the event's action to `action` on whichever shard holds it; fails unless exactly one row changed. */
export function tamperAction(eventId, action) {
  if (!STATE) throw new Error("run the browser tests with npm run test:browser (WITNESS_STATE is missing)");
  const changed = [...new Set(shardDatabases().values())].flatMap((name) =>
    dbSql(name, `UPDATE events SET action = ${quote(action)} WHERE id = ${quote(eventId)} RETURNING id`, { persistTo: STATE }),
  );
  assert.equal(changed.length, 1, `tampered rows for ${eventId}`);
}

/** A new project and its admin key, for a test whose tamper must not touch the shared project's chain. */
export function tamperProject() {
  if (!STATE) throw new Error("run the browser tests with npm run test:browser (WITNESS_STATE is missing)");
  return createKey(`tamper-${Math.random().toString(36).slice(2, 10)}`, { persistTo: STATE }).key;
}
