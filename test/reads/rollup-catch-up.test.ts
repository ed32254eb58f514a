/**
 * Issue 38: a commit's activity counts wait in the ledger's memory instead of
 * costing three billed rows a commit; reads still see every commit, and a
 * ledger stopped with counts waiting counts those events again from D1, once.
 */
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createProject, ingest } from "../helpers";

const ledger = (projectId: string) => env.LEDGER.get(env.LEDGER.idFromName(projectId));
const RANGE = "from=2026-03-10T00:00:00.000Z&to=2026-03-10T23:59:59.999Z&bucket=hour";
const activity = async (key: string) => (await call("GET", `/v1/stats/activity?${RANGE}`, { key })).json.data;
const at = (h: number) => `2026-03-10T${String(h).padStart(2, "0")}:15:00.000Z`;
/** What the ledger has written of its counts: rows of the hourly table, and the seq they reach. */
const written = (projectId: string) =>
  runInDurableObject(ledger(projectId), (_: unknown, s: DurableObjectState) => ({
    rows: s.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM activity_rollups").one().n,
    through: s.storage.sql.exec<{ seq: number }>("SELECT seq FROM activity_through").toArray()[0]?.seq ?? null,
  }));

describe("activity counts written later than their commit", () => {
  it("are written when read, not per commit, and a ledger stopped with counts waiting counts those events once", async () => {
    const p = await createProject();
    for (const [action, hour] of [["user.login", 9], ["user.login", 9], ["invoice.paid", 10]] as const) {
      expect((await ingest(p.key, { action, occurred_at: at(hour) })).status).toBe(201);
    }
    // Three commits, no count written yet.
    expect(await written(p.id)).toEqual({ rows: 0, through: 0 });
    // The runtime stops the ledger with them in memory; its next instance counts them from D1.
    await evictDurableObject(ledger(p.id));
    let seen = await activity(p.key);
    expect(seen.total).toBe(3);
    expect(Object.fromEntries(seen.series.map((s: { action: string; counts: number[] }) => [s.action, [s.counts[9], s.counts[10]]]))).toEqual({
      "user.login": [2, 0],
      "invoice.paid": [0, 1],
    });
    expect(await written(p.id)).toEqual({ rows: 2, through: 3 });

    // A read writes what waits; a later stop and start counts nothing twice.
    expect((await ingest(p.key, { action: "user.logout", occurred_at: at(11) })).status).toBe(201);
    expect((await activity(p.key)).total).toBe(4);
    await evictDurableObject(ledger(p.id));
    expect((await ingest(p.key, { action: "user.logout", occurred_at: at(11) })).status).toBe(201);
    await evictDurableObject(ledger(p.id));
    seen = await activity(p.key);
    expect(seen.total).toBe(5);
    expect(seen.series.find((s: { action: string }) => s.action === "user.logout").counts[11]).toBe(2);
    const actions = (await call("GET", "/v1/actions", { key: p.key })).json.data;
    expect(Object.fromEntries(actions.map((a: { action: string; count: number }) => [a.action, a.count]))).toEqual({ "invoice.paid": 1, "user.login": 2, "user.logout": 2 });
  });

  it("are written by the ledger's alarm, which follows commits", async () => {
    const p = await createProject();
    expect((await ingest(p.key, { action: "user.login", occurred_at: at(9) })).status).toBe(201);
    expect((await written(p.id)).rows).toBe(0);
    await runDurableObjectAlarm(ledger(p.id));
    expect(await written(p.id)).toEqual({ rows: 1, through: 1 });
  });
});
