import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { call, createProject, handRowId, ingestMany } from "../helpers";

const events = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({ action: `doc.${tag}`, actor: { id: `u_${i % 9}`, name: `User ${i % 9}` }, metadata: { i } }));

async function verify(key: string) {
  const res = await call("GET", "/v1/events/verify", { key });
  if (res.status !== 200) throw new Error(`verify answered ${res.status}: ${res.text}`);
  return res.json.data;
}
const headOf = async (projectId: string) => (await ledgerOf(env, projectId).anchor()).seq;

/** Appends batches until stopped; counts what landed. */
function writer(key: string) {
  let running = true;
  let landed = 0;
  const done = (async () => {
    while (running) {
      const res = await call("POST", "/v1/events/batch", { key, body: { events: events(25, "during") } });
      expect(res.status).toBe(201);
      landed += res.json.data.length;
    }
  })();
  return {
    get landed() {
      return landed;
    },
    stop: async () => {
      running = false;
      await done;
    },
  };
}

describe("verify tells the truth while the project changes", () => {
  it("an honest project verifies ok every time while events are appended during each walk", async () => {
    const p = await createProject();
    // Three of verify's pages (2,000 rows each): the appends land while the walk is between pages.
    await ingestMany(p.key, events(5_000, "before"));
    const w = writer(p.key);
    try {
      for (let round = 0; round < 4; round++) {
        const before = await headOf(p.id);
        const result = await verify(p.key);
        const after = await headOf(p.id);
        expect(result).toMatchObject({ ok: true, failure: null });
        // The race was real: the ledger committed events while this walk ran.
        expect(after).toBeGreaterThan(before);
        expect(result.verified).toBeGreaterThanOrEqual(before);
      }
    } finally {
      await w.stop();
    }
    expect(w.landed).toBeGreaterThan(0);
    // A row planted past the head is still caught once the appends stop.
    const head = await ledgerOf(env, p.id).anchor();
    await p.db
      .prepare(
        "INSERT INTO events (row_id, id, project_id, seq, action, targets, metadata, occurred_at, received_at, pii_commitment, hash, prev_hash) " +
          `VALUES (${handRowId("?2", "?3")}, ?1, ?2, ?3, 'x', '[]', '{}', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 'c', 'h', ?4)`,
      )
      .bind(`planted-${p.id}`, p.id, head.seq + 1, head.hash)
      .run();
    expect((await verify(p.key)).failure).toMatchObject({ event_id: `planted-${p.id}`, reason: "chain_broken" });
  }, 120_000);
});
