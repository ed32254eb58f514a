import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { dropPeriod, makePeriod } from "../../src/model/periods";
import { FIRST_WINDOW, RARE_HITS, searchTuning } from "../../src/reads/event-read";
import { EXPORT_BATCH, exportTuning } from "../../src/reads/export-stream";
import { BASE, call, createProject, expectEveryListing, ingestMany, listOrder, listPages, moveIntoPeriod, pastArm } from "../helpers";

/** GET /v1/exports' events, in the order it wrote them. */
async function exported(key: string, query: string): Promise<number[]> {
  const res = await exports.default.fetch(new Request(`${BASE}/v1/exports?format=json${query}`, { headers: { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "10.9.9.9" } }));
  expect(res.status).toBe(200);
  return (JSON.parse(await res.text()) as Array<{ seq: number }>).map((e) => e.seq);
}

type Sent = { seq: number; occurred_at: string; name: string };

/** Sends actors named `names` to project `p`, backdated into `month` of 2025 (null: happening when received), moved into `arm` (null: left in the main tables), and notes each in `sent`. */
function sender(p: Awaited<ReturnType<typeof createProject>>, sent: Sent[]) {
  return async (arm: number | null, month: number | null, names: string[]) => {
    const stored = await ingestMany(p.key, names.map((name, i) => ({ action: "doc.read", actor: { id: `u${i}`, name }, ...(month === null ? {} : { occurred_at: new Date(Date.UTC(2025, month, 1, 12, i)).toISOString() }) })));
    stored.forEach((e, i) => sent.push({ seq: e.seq, occurred_at: e.occurred_at, name: names[i] }));
    if (arm !== null) expect(await moveIntoPeriod(p.db, p.id, arm, stored[0].seq - 1)).toBe(names.length);
  };
}

describe("reads over arms: each page from the arms that can hold it", () => {
  it("lists, searches and gets a project's events in past periods and the main tables as from one table", async () => {
    const p = await createProject();
    // Periods long past, so settled: no row can land in them.
    const older = pastArm();
    const [newer, empty] = [older + 100, older + 200];
    for (const n of [older, newer, empty]) await makePeriod(p.db, n);
    try {
      const input = (i: number, month: number | null) => ({
        action: i % 3 === 0 ? "doc.read" : "doc.write",
        actor: { id: `u${i % 4}`, name: `Member ${i + 1}` },
        targets: [{ type: i % 2 ? "doc" : "folder", id: `t${i}` }],
        // Backdated into January and June; the last twelve happen when received.
        ...(month === null ? {} : { occurred_at: new Date(Date.UTC(2026, month, 1 + (i % 12), 10, i)).toISOString() }),
      });
      const sent: Array<{ seq: number; occurred_at: string; id: string; action: string; actor: string; type: string }> = [];
      const send = async (from: number, month: number | null) => {
        const events = Array.from({ length: 12 }, (_, k) => input(from + k, month));
        const stored = await ingestMany(p.key, events);
        stored.forEach((e, k) => sent.push({ seq: e.seq, occurred_at: e.occurred_at, id: e.id, action: events[k].action, actor: events[k].actor.id, type: events[k].targets[0].type }));
        return stored[0].seq - 1;
      };
      // Written by the commit's own statements into each period, as the ledger writes them.
      expect(await moveIntoPeriod(p.db, p.id, older, await send(0, 0))).toBe(12);
      expect(await moveIntoPeriod(p.db, p.id, newer, await send(12, 5))).toBe(12);
      await send(24, null);

      await expectEveryListing(p.key, sent, [
        ["", () => true],
        ["action=doc.read", (e) => e.action === "doc.read"],
        ["actor_id=u2", (e) => e.actor === "u2"],
        ["target_type=doc", (e) => e.type === "doc"],
        ["date_from=2026-05-01T00:00:00Z", (e) => e.occurred_at >= "2026-05-01"],
      ]);
      expect(await listPages(p.key, "/v1/events/search", "q=member", 5)).toEqual(listOrder(sent, () => true));
      expect(await listPages(p.key, "/v1/events/search", "q=member%2017", 2)).toEqual([sent[16].seq]);
      expect(await listPages(p.key, "/v1/events/search", "q=member%2011", 2)).toEqual([sent[10].seq]);
      expect(await listPages(p.key, "/v1/events/search", "q=member%2029", 2)).toEqual([sent[28].seq]);
      for (const e of [sent[2], sent[14], sent[30]]) {
        const got = await call("GET", `/v1/events/${e.id}`, { key: p.key });
        expect(got.status, got.text).toBe(200);
        expect(got.json.data.seq).toBe(e.seq);
      }
      // Exports page by the same spans: pages of 5, so pages end inside each arm and across them.
      exportTuning.batch = 5;
      try {
        expect(await exported(p.key, "")).toEqual(listOrder(sent, () => true));
        expect(await exported(p.key, "&actor_id=u2")).toEqual(listOrder(sent, (e) => e.actor === "u2"));
        expect(await exported(p.key, "&date_to=2026-05-01T00:00:00Z")).toEqual(listOrder(sent, (e) => e.occurred_at <= "2026-05-01"));
      } finally {
        exportTuning.batch = EXPORT_BATCH;
      }
    } finally {
      for (const n of [older, newer, empty]) await dropPeriod(p.db, n);
    }
  });

  it("goes on past a page that ends empty above a period it left unread, in lists and exports", async () => {
    const p = await createProject();
    const oldest = pastArm();
    const [older, newer] = [oldest + 100, oldest + 200];
    for (const n of [oldest, older, newer]) await makePeriod(p.db, n);
    try {
      const at = (month: number, day: number) => new Date(Date.UTC(2025, month, day, 12)).toISOString();
      const send = async (action: string, times: string[]) => (await ingestMany(p.key, times.map((occurred_at) => ({ action, occurred_at })))).map((e) => e.seq);
      // The action's rows: two in the oldest period (October), one in the main tables backdated to January, none in
      // the two periods between. Its first page of 2 finds the January row with the newest period, reads the next
      // period down for more (nothing there) and ends above the oldest one, before the January row: empty.
      const first = await send("doc.rare", [at(9, 3), at(9, 2)]);
      expect(await moveIntoPeriod(p.db, p.id, oldest, first[0] - 1)).toBe(2);
      const middle = await send("doc.read", [at(11, 5), at(11, 4)]);
      expect(await moveIntoPeriod(p.db, p.id, older, middle[0] - 1)).toBe(2);
      const late = await send("doc.read", [new Date(Date.UTC(2026, 2, 1)).toISOString()]);
      expect(await moveIntoPeriod(p.db, p.id, newer, late[0] - 1)).toBe(1);
      const [main] = await send("doc.rare", [at(0, 2)]);
      const want = [first[0], first[1], main];

      const res = await call("GET", "/v1/events?action=doc.rare&limit=2", { key: p.key });
      expect(res.status, res.text).toBe(200);
      expect(res.json.data, "the first page ends above the unread period").toEqual([]);
      expect(res.json.nextCursor).toBe(`${at(9, 3)}~999999999999999`);
      expect(await listPages(p.key, "/v1/events", "action=doc.rare", 2)).toEqual(want);
      exportTuning.batch = 2;
      try {
        expect(await exported(p.key, "&action=doc.rare")).toEqual(want);
      } finally {
        exportTuning.batch = EXPORT_BATCH;
      }
    } finally {
      for (const n of [oldest, older, newer]) await dropPeriod(p.db, n);
    }
  });

  it("searches on in the periods below newer ones that ran out, the term rare there or common", async () => {
    const p = await createProject();
    const oldest = pastArm();
    const [older, newer] = [oldest + 100, oldest + 200];
    for (const n of [oldest, older, newer]) await makePeriod(p.db, n);
    try {
      const sent: Sent[] = [];
      const send = sender(p, sent);
      const of = (k: number, name: string) => Array.from({ length: k }, (_, i) => (i % 5 === 2 ? name : "plain member"));
      // Kestrel: once in the main tables and once in the newest period, which a page of 3 reads first and which run
      // out; then in every event of the older period, its search groups many. Osprey: only in the two oldest.
      await send(oldest, 0, [...of(20, "osprey"), "kestrel one"]);
      await send(older, 3, [...Array.from({ length: 40 }, () => "kestrel"), "osprey"]);
      await send(newer, 8, [...of(10, "plain"), "kestrel two"]);
      await send(null, null, ["kestrel three"]);
      const holding = (term: string) => listOrder(sent, (e) => e.name.includes(term));
      expect(holding("kestrel")).toHaveLength(43);
      expect(holding("osprey")).toHaveLength(5);
      // With RARE_HITS, both terms are rare in every period: each arm read after the newer ran out answers its count
      // and its page in one statement. With 1, kestrel is common in the older period: its page is set aside and the
      // list walked there. Osprey's first page reads the two oldest periods together (one compound statement).
      for (const rareHits of [RARE_HITS, 1]) {
        searchTuning.rareHits = rareHits;
        try {
          for (const limit of [3, 50]) {
            expect(await listPages(p.key, "/v1/events/search", "q=kestrel", limit), `kestrel, pages of ${limit}, rare below ${rareHits}`).toEqual(holding("kestrel"));
            expect(await listPages(p.key, "/v1/events/search", "q=osprey", limit), `osprey, pages of ${limit}, rare below ${rareHits}`).toEqual(holding("osprey"));
          }
          expect(await listPages(p.key, "/v1/events/search", "q=heron", 3)).toEqual([]);
        } finally {
          searchTuning.rareHits = RARE_HITS;
        }
      }
    } finally {
      for (const n of [oldest, older, newer]) await dropPeriod(p.db, n);
    }
  });

  it("finds a term past the newest arms' first window, in them and in the periods below, page by page", async () => {
    const p = await createProject();
    const oldest = pastArm();
    const older = oldest + 100;
    for (const n of [oldest, older]) await makePeriod(p.db, n);
    try {
      const sent: Sent[] = [];
      const send = sender(p, sent);
      await send(oldest, 0, ["osprey one", "plain", "osprey two", "grebe one"]);
      await send(older, 3, ["plain", "osprey three", "plain"]);
      // The main tables' newest events, more than a search's first window (FIRST_WINDOW): osprey is in none of them,
      // grebe in the oldest of them, past the window, and in the oldest period.
      await send(null, null, ["grebe two", ...Array.from({ length: FIRST_WINDOW + 10 }, () => "plain member")]);
      for (const limit of [1, 2, 50]) {
        expect(await listPages(p.key, "/v1/events/search", "q=osprey", limit), `osprey, pages of ${limit}`).toEqual(listOrder(sent, (e) => e.name.includes("osprey")));
        expect(await listPages(p.key, "/v1/events/search", "q=grebe", limit), `grebe, pages of ${limit}`).toEqual(listOrder(sent, (e) => e.name.includes("grebe")));
      }
      expect(await listPages(p.key, "/v1/events/search", "q=heron", 3)).toEqual([]);
    } finally {
      for (const n of [oldest, older]) await dropPeriod(p.db, n);
    }
  });
});
