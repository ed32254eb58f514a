import { describe, expect, it } from "vitest";
import { searchEvents } from "../../src/reads/event-read";
import type { Selection } from "../../src/model/event-query";
import { compactSearchIndex, indexText, reindexBacklog, SEARCH_GROUP, searchExpression, searchTag, slotTag } from "../../src/model/search-index";
import { call, createProject, ingest, ingestMany } from "../helpers";
import { COLUMNS } from "../../src/chain/event-insert";
import { eraseApplied } from "../chain/erasure-helpers";
import { asInvocation, meterReport, resetMeterReport } from "../../src/lib/meter";
import { meterEnv } from "../../src/lib/metered-bindings";
import { projectRowKey } from "../../src/storage/shards";
import { env } from "cloudflare:workers";

const selection = (projectId: string): Selection => ({
  projectId, organization: null, actorId: null, ipAddress: null, dateFrom: null, dateTo: null, actions: null, exclude: [],
});

async function matches(db: D1Database, expression: string): Promise<number[]> {
  const { results } = await db.prepare("SELECT rowid AS r FROM events_search WHERE events_search MATCH ? ORDER BY rowid")
    .bind(expression)
    .all<{ r: number }>();
  return results.map((x) => x.r);
}

/** The index entries a project's rows are found by: one per search group (row_id - search_lead). */
async function groupKeys(db: D1Database, projectId: string): Promise<number[]> {
  const { results } = await db.prepare("SELECT DISTINCT row_id - search_lead AS k FROM events WHERE project_id = ? ORDER BY k").bind(projectId).all<{ k: number }>();
  return results.map((x) => x.k);
}

/** The groups that have an entry: all but the project's newest one while fewer than 16 events fill it (it stays open). */
async function closedGroupKeys(db: D1Database, projectId: string): Promise<number[]> {
  const keys = await groupKeys(db, projectId);
  const newest = await db
    .prepare("SELECT count(*) AS n FROM events WHERE project_id = ?1 AND row_id - search_lead = ?2")
    .bind(projectId, keys[keys.length - 1])
    .first<{ n: number }>();
  return newest!.n < SEARCH_GROUP ? keys.slice(0, -1) : keys;
}

async function rowIds(db: D1Database, projectId: string): Promise<number[]> {
  const { results } = await db.prepare("SELECT row_id FROM events WHERE project_id = ? ORDER BY row_id").bind(projectId).all<{ row_id: number }>();
  return results.map((x) => x.row_id);
}

/** Pages of the index (data and b-tree keys) that still hold these bytes anywhere. */
async function pagesHolding(db: D1Database, text: string): Promise<number> {
  const row = await db
    .prepare(
      "SELECT (SELECT count(*) FROM events_search_data WHERE instr(block, CAST(?1 AS BLOB)) > 0) + " +
        "(SELECT count(*) FROM events_search_idx WHERE instr(term, CAST(?1 AS BLOB)) > 0) AS n",
    )
    .bind(text)
    .first<{ n: number }>();
  return row!.n;
}

describe("the per-project search index", () => {
  it("tags every word with 6 base-36 characters of its project", () => {
    expect(searchTag("acme")).toMatch(/^[0-9a-z]{6}$/);
    expect(searchTag("acme")).toBe(searchTag("acme"));
    expect(searchTag("acme")).not.toBe(searchTag("acme2"));
    const row = { action: "User.Login", actor_name: "José Login", actor_email: null, actor_id: "u_1" };
    expect(indexText("abc123", row)).toBe("abc123user abc123login abc123jose abc123u abc1231");
  });

  it("replaces the old global index", async () => {
    const { db } = await createProject();
    const { results } = await db.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'events_fts%'").all();
    expect(results).toEqual([]);
  });

  it("holds no untagged words: another project's terms are other terms, with other doclists", async () => {
    const a = await createProject(undefined, { shard: 0 });
    const b = await createProject(undefined, { shard: 0 });
    const same = { action: "doc.shared", actor: { id: "u_1", name: "Same Person" } };
    // A full group each, and b's next one open (no entry yet).
    await ingestMany(a.key, Array(SEARCH_GROUP).fill(same));
    await ingestMany(b.key, Array(SEARCH_GROUP + 3).fill(same));
    expect(await matches(a.db, searchExpression(["same", "doc"], a.id))).toEqual(await groupKeys(a.db, a.id));
    expect(await matches(b.db, searchExpression(["same", "doc"], b.id))).toEqual(await closedGroupKeys(b.db, b.id));
    expect(await closedGroupKeys(b.db, b.id)).toHaveLength(1);
    expect(await matches(a.db, '"same"* OR "doc"* OR "person"*')).toEqual([]);
  });

  it("search asks FTS5 only for its own project's tag", async () => {
    const p = await createProject();
    const [needle] = await ingestMany(p.key, [{ action: "needle.found" }, ...Array.from({ length: 260 }, () => ({ action: "hay.row" }))]);
    const seen: Array<{ sql: string; params: unknown[] }> = [];
    const recording = {
      prepare(sql: string) {
        const statement = p.db.prepare(sql);
        return { bind: (...params: unknown[]) => (seen.push({ sql, params }), statement.bind(...params)) };
      },
    } as unknown as D1Database;
    const page = await searchEvents(recording, await projectRowKey(env, p.id), selection(p.id), ["needle"], null, 10);
    expect(page.rows.map((r) => r.id)).toEqual([needle.id]);
    const matching = seen.filter((s) => s.sql.includes("MATCH"));
    // The rare-term probe and the FTS5 walk below the first window, one statement (event-query.ts, PROBED).
    expect(matching).toHaveLength(1);
    for (const { sql, params } of matching) {
      expect(sql).toContain("events_search MATCH");
      expect(params).toContain(searchExpression(["needle"], p.id));
    }
  });

  it("after an erasure, the actor's words match nothing and, once compacted, leave the index's pages", async () => {
    const p = await createProject();
    const marker = `zq${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
    const actor = { id: `${marker}id`, name: `Ada ${marker}name`, email: `${marker}mail@example.com` };
    // A full group, so it has its entry: the erased words are in the index's pages before.
    const [e] = await ingestMany(p.key, [{ action: "profile.updated", actor }, ...Array(SEARCH_GROUP - 1).fill({ action: "doc.viewed" })]);
    expect(await matches(p.db, searchExpression([marker], p.id))).toHaveLength(1);
    expect(await pagesHolding(p.db, marker)).toBeGreaterThan(0);

    expect((await eraseApplied(p.key, `/v1/actors/${actor.id}`)).status).toBe(202);
    expect(await matches(p.db, searchExpression([marker], p.id))).toEqual([]);
    // The scrub indexed the scrubbed values in the same batch: the action stays searchable.
    const row = (await p.db.prepare("SELECT row_id - search_lead AS row_id, actor_name, search_words FROM events WHERE id = ?").bind(e.id)
      .first<{ row_id: number; actor_name: null; search_words: string }>())!;
    expect(row.actor_name).toBeNull();
    expect(row.search_words).toBe("profile updated");
    expect(await matches(p.db, searchExpression(["profile", "updated"], p.id))).toEqual([row.row_id]);
    expect(await matches(p.db, searchExpression(["ada"], p.id))).toEqual([]);
    expect((await compactSearchIndex(p.db, 50)).done).toBe(true);
    expect(await pagesHolding(p.db, marker)).toBe(0);
    expect(await matches(p.db, searchExpression(["profile"], p.id))).toEqual([row.row_id]);
    await p.db.prepare("INSERT INTO events_search (events_search, rank) VALUES ('integrity-check', 0)").run();
  });

  it("reindexBacklog gives rows written before search groups their words and an entry each, once, in small steps", async () => {
    // Rows from before search groups are older rows: on the seq index (model/row-keys.ts).
    const p = await createProject(undefined, { shard: 1, keyed: false });
    const other = await createProject(undefined, { shard: 1, keyed: false });
    await ingestMany(p.key, Array.from({ length: 5 }, (_, i) => ({ action: "legacy.row", actor: { id: `u_${i}`, name: "Old Timer" } })));
    await ingestMany(other.key, Array(SEARCH_GROUP).fill({ action: "legacy.row" }));
    const ids = await rowIds(p.db, p.id);
    // As after the migration: p's rows are as older code wrote them (no stored words, no group) and have no entries yet,
    // other's rows (inside the range) have their words and their group's entry.
    await p.db.prepare("UPDATE events SET search_lead = 0, search_words = NULL WHERE project_id = ?").bind(p.id).run();
    await p.db.prepare("DELETE FROM events_search WHERE rowid IN (SELECT row_id FROM events WHERE project_id = ?)").bind(p.id).run();
    await p.db.prepare("UPDATE search_backlog SET next_row_id = ?, last_row_id = NULL WHERE id = 1").bind(ids[0]).run();
    const expression = searchExpression(["legacy", "timer"], p.id);
    expect(await matches(p.db, expression)).toEqual([]);

    let indexed = 0;
    let steps = 0;
    for (;;) {
      const step = await reindexBacklog(p.db, 2);
      indexed += step.indexed;
      steps++;
      if (step.done) break;
    }
    expect(indexed).toBe(5);
    expect(steps).toBeGreaterThanOrEqual(3);
    expect(await matches(p.db, expression)).toEqual(ids);
    // Each is a group of one: its own words, its entry at its row (lead 0) under slot 0's tag.
    const { results } = await p.db.prepare("SELECT search_lead, search_words FROM events WHERE project_id = ? ORDER BY seq").bind(p.id).all();
    expect(results).toEqual(Array.from({ length: 5 }, (_, i) => ({ search_lead: 0, search_words: `legacy row old timer u ${i}` })));
    expect(await matches(p.db, `"${slotTag(searchTag(p.id), 0)}timer"`)).toEqual(ids);
    expect(await matches(p.db, searchExpression(["legacy"], other.id))).toEqual(await groupKeys(other.db, other.id));
    expect(await reindexBacklog(p.db, 2)).toEqual({ indexed: 0, done: true });
    await p.db.prepare("INSERT INTO events_search (events_search, rank) VALUES ('integrity-check', 0)").run();
  });

  it("once the backlog gives an older row its words, an entry planted at its id no longer lists it under words it lacks", async () => {
    const p = await createProject(undefined, { keyed: false });
    // 300 events: the oldest 50 lie below the search's first list walk (250), so a search finds them through the index.
    const sent = await ingestMany(p.key, Array.from({ length: 300 }, (_, i) => ({ action: "doc.read", actor: { id: `acct${i}z`, name: i === 0 ? "Ada Lovelace" : "Sam Other" } })));
    // As older code wrote them: no stored words, an entry each under the project's tag, made from the row's fields.
    const { results: rows } = await p.db
      .prepare("SELECT row_id, action, actor_name, actor_email, actor_id FROM events WHERE project_id = ? ORDER BY seq")
      .bind(p.id)
      .all<{ row_id: number; action: string; actor_name: string | null; actor_email: string | null; actor_id: string | null }>();
    await p.db.prepare("UPDATE events SET search_lead = 0, search_words = NULL WHERE project_id = ?").bind(p.id).run();
    await p.db.prepare("DELETE FROM events_search WHERE rowid IN (SELECT row_id FROM events WHERE project_id = ?)").bind(p.id).run();
    const tag = searchTag(p.id);
    const own = rows.map((r) => [r.row_id, indexText(tag, r)]);
    // A database writer adds a word to the oldest event's entry.
    own[0][1] += ` ${tag}zebra`;
    await p.db.prepare("INSERT INTO events_search (rowid, words) SELECT j.value ->> 0, j.value ->> 1 FROM json_each(?) j").bind(JSON.stringify(own)).run();
    const found = async (q: string) => (await searchAll(p.key, q)).map((id) => sent.findIndex((e) => e.id === id) + 1);
    expect(await found("zebra")).toEqual([1]);
    expect(await found("lovelace")).toEqual([1]);

    // From the project's lowest row_id: a group's first event takes the top of its block (search-index.ts).
    await p.db.prepare("UPDATE search_backlog SET next_row_id = ?, last_row_id = NULL WHERE id = 1").bind(Math.min(...rows.map((r) => r.row_id))).run();
    // What it bills, once: each row's words (a column no index holds), its old entry's delete (the update trigger's),
    // its new entry; and the backlog's state row, once for the range's end and once a step.
    const metered = meterEnv({ DB: p.db });
    resetMeterReport();
    let steps = 0;
    await asInvocation("backlog", async () => {
      for (let done = false; !done; steps++) done = (await reindexBacklog(metered.DB, 100)).done;
    });
    expect(meterReport().find((r) => r.invocation === "backlog")!.rowsWritten).toBe(3 * 300 + 1 + steps);
    expect(await found("zebra")).toEqual([]);
    expect(await found("lovelace")).toEqual([1]);
    expect(await found("sam")).toHaveLength(299);
    // Planted again on its new entry: the row's own words say no.
    await p.db.prepare("DELETE FROM events_search WHERE rowid = ?").bind(rows[0].row_id).run();
    await p.db.prepare("INSERT INTO events_search (rowid, words) VALUES (?, ?)").bind(rows[0].row_id, `${indexText(slotTag(tag, 0), rows[0])} ${slotTag(tag, 0)}zebra`).run();
    expect(await found("zebra")).toEqual([]);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 300 });
  });
});

/** Every page of GET /v1/events/search, newest first: the ids found. */
async function searchAll(key: string, q: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const res = await call("GET", `/v1/events/search?q=${encodeURIComponent(q)}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key });
    expect(res.status).toBe(200);
    ids.push(...res.json.data.map((e: { id: string }) => e.id));
    cursor = res.json.nextCursor;
  } while (cursor);
  return ids;
}

describe("search groups: one index entry per 16 events, across commits", () => {
  // 300 events, 100 a request: the first 50 (oldest) lie below the search's list walks (250 and 2,000 events), so
  // they are found through the index; every 7th names "Pat Marker", the rest "Sam Other".
  const events = Array.from({ length: 300 }, (_, i) => ({
    action: i % 2 === 0 ? "doc.viewed" : "doc.shared",
    actor: { id: `acct${i}z`, name: i % 7 === 0 ? "Pat Marker" : "Sam Other" },
  }));
  const newestFirst = <T>(list: T[]) => [...list].reverse();

  it("writes one entry per group, and search still finds exactly the events holding every term", async () => {
    const p = await createProject();
    const stored = await ingestMany(p.key, events);
    // 100 events a commit, each going on in the group the one before left open, whatever other test files wrote to
    // the shard meanwhile: 19 groups (18 full, the last open with 12). Every group but the open one has its entry.
    const keys = await groupKeys(p.db, p.id);
    expect(keys).toHaveLength(Math.ceil(300 / SEARCH_GROUP));
    expect(await matches(p.db, searchExpression(["doc"], p.id))).toEqual(keys.slice(0, -1));
    expect(await closedGroupKeys(p.db, p.id)).toEqual(keys.slice(0, -1));
    // A group's entry holds words its other events do not: only the events that hold every term are hits.
    const marked = stored.filter((_, i) => i % 7 === 0).map((e) => e.id);
    expect(await searchAll(p.key, "marker")).toEqual(newestFirst(marked));
    expect(await searchAll(p.key, "pat shared")).toEqual(newestFirst(stored.filter((_, i) => i % 7 === 0 && i % 2 === 1).map((e) => e.id)));
    expect(await searchAll(p.key, "acct3z shared")).toEqual([stored[3].id]);
    expect(await searchAll(p.key, "acct3z viewed")).toEqual([]);
  });

  it("matches a group only when one of its events holds every term, never terms spread over two of them", async () => {
    expect(slotTag("abc123", 0)).toBe("abc120");
    expect(slotTag("abc123", SEARCH_GROUP - 1)).toBe("abc12f");
    const p = await createProject();
    await ingestMany(p.key, [
      { action: "doc.viewed", actor: { id: "a1", name: "Alpha Person" } },
      { action: "doc.viewed", actor: { id: "b1", name: "Beta Person" } },
      ...Array(SEARCH_GROUP - 2).fill({ action: "doc.viewed", actor: { id: "f1", name: "Filler" } }),
    ]);
    const [key] = await groupKeys(p.db, p.id);
    expect(await matches(p.db, searchExpression(["alpha"], p.id))).toEqual([key]);
    expect(await matches(p.db, searchExpression(["alpha", "person"], p.id))).toEqual([key]);
    expect(await matches(p.db, searchExpression(["alpha", "beta"], p.id))).toEqual([]);
    expect(await searchAll(p.key, "alpha beta")).toEqual([]);
  });

  it("keeps a group's entry until the last of its events is gone", async () => {
    const p = await createProject();
    const stored = await ingestMany(p.key, events.slice(0, 20));
    // 16 and 4: the second group is open, so only the first has an entry.
    const keys = await groupKeys(p.db, p.id);
    expect(keys).toHaveLength(2);
    expect(await matches(p.db, searchExpression(["doc"], p.id))).toEqual([keys[0]]);
    // Retention by rule takes some events of a group and not others: the group's first event among them.
    await p.db.prepare("DELETE FROM events WHERE project_id = ? AND seq IN (1, 2, 3)").bind(p.id).run();
    expect(await matches(p.db, searchExpression(["doc"], p.id))).toEqual([keys[0]]);
    expect(await searchAll(p.key, "marker")).toEqual([stored[14].id, stored[7].id]);
    await p.db.prepare("DELETE FROM events WHERE project_id = ? AND seq <= 16").bind(p.id).run();
    expect(await matches(p.db, searchExpression(["doc"], p.id))).toEqual([]);
    // The open group's events are found without an entry.
    expect(await searchAll(p.key, "acct17z")).toEqual([stored[17].id]);
    await p.db.prepare("DELETE FROM events WHERE project_id = ?").bind(p.id).run();
    expect(await matches(p.db, searchExpression(["doc"], p.id))).toEqual([]);
    await p.db.prepare("INSERT INTO events_search (events_search, rank) VALUES ('integrity-check', 0)").run();
  });

  it("gives commits of one event one entry per 16 of them, and finds the events of the open group, however old they say they are", async () => {
    const p = await createProject();
    // Enough events that a search's list walks (the newest 250 and 2,000 by occurred_at) do not reach the old ones below.
    await ingestMany(p.key, Array.from({ length: 2400 }, (_, i) => ({ ...events[i % events.length], occurred_at: new Date(Date.now() - 60_000).toISOString() })));
    const lone: string[] = [];
    for (let i = 0; i < 20; i++) {
      const occurred = new Date(Date.now() - (400 + i) * 86_400_000).toISOString();
      const res = await ingest(p.key, { action: "key.rotated", actor: { id: `rot${i}z`, name: i === 19 ? "Quill Newest" : "Quill" }, occurred_at: occurred });
      lone.push(res.json.data.id);
    }
    // Twenty commits of one event, whatever other test files commit to the shard in between: an entry each would
    // be 20; one for the group of 16 they filled, the last 4 open (2,400 filled 150 groups exactly).
    expect(await matches(p.db, searchExpression(["key", "rotated"], p.id))).toHaveLength(1);
    const keys = await groupKeys(p.db, p.id);
    expect(keys).toHaveLength(152);
    expect(await closedGroupKeys(p.db, p.id)).toEqual(keys.slice(0, -1));
    // Found through the index (closed groups) and through the open group, in list order: the oldest occurred_at last.
    expect(await searchAll(p.key, "quill")).toEqual(lone);
    // Only the newest, which is in the open group.
    expect(await searchAll(p.key, "quill newest")).toEqual([lone[19]]);
    expect(await searchAll(p.key, "rot19z")).toEqual([lone[19]]);
  });

  it("never numbers a row where one already is: a group whose places are not all free is closed, not continued", async () => {
    // The numbering of older projects' rows (a keyed project's rows sit at their keys: model/row-keys.ts).
    const p = await createProject(undefined, { keyed: false });
    const rowOf = (seq: number) =>
      p.db.prepare("SELECT row_id, search_lead AS lead FROM events WHERE project_id = ? AND seq = ?").bind(p.id, seq).first<{ row_id: number; lead: number }>();
    /** Another row put at this row_id, as an insert numbered inside the block would be (a copy of one of p's, under another project). */
    const plant = async (rowId: number) => {
      const cols = COLUMNS.filter((c) => c !== "project_id").join(", ");
      await p.db.prepare(`INSERT INTO events (row_id, project_id, ${cols}) SELECT ?, ?, ${cols} FROM events WHERE project_id = ? AND seq = 2`)
        .bind(rowId, `planted-${crypto.randomUUID()}`, p.id).run();
      return () => p.db.prepare("DELETE FROM events WHERE row_id = ?").bind(rowId).run();
    };
    await ingestMany(p.key, [{ action: "doc.viewed", actor: { id: "a1" } }, { action: "doc.viewed", actor: { id: "a2" } }, { action: "doc.viewed", actor: { id: "a3" } }]);
    const top = (await rowOf(1))!;
    expect(top.lead).toBe(SEARCH_GROUP - 1);
    const key = top.row_id - top.lead;
    // A place further in the block is taken: the next commit of 20 starts a block of its own and closes this group.
    const unplant = await plant(key + 9);
    try {
      const next = await ingestMany(p.key, Array.from({ length: 20 }, (_, i) => ({ action: "doc.viewed", actor: { id: `b${i}` } })));
      expect(next).toHaveLength(20);
      expect((await rowOf(4))!.row_id - (await rowOf(4))!.lead).not.toBe(key);
      expect(await matches(p.db, searchExpression(["a2"], p.id))).toEqual([key]);
      // 16 of them filled a group; the last 4 (seqs 20-23) are open, seq 20 at the top of their block. With that row
      // gone (retention by rule), the open group is closed too, and the next commit starts a block of its own.
      expect(await matches(p.db, searchExpression(["b19"], p.id))).toEqual([]);
      await p.db.prepare("DELETE FROM events WHERE project_id = ? AND seq = 20").bind(p.id).run();
      expect((await ingest(p.key, { action: "doc.viewed", actor: { id: "c1" } })).status).toBe(201);
      const closed = (await rowOf(23))!;
      expect(await matches(p.db, searchExpression(["b19"], p.id))).toEqual([closed.row_id - closed.lead]);
      for (const term of ["a2", "b3", "b19", "c1"]) expect(await searchAll(p.key, term)).toHaveLength(1);
    } finally {
      await unplant();
    }
  });

  it("an erasure in the open group gives it its entry, and the next commit starts a group of its own", async () => {
    const p = await createProject(undefined, { keyed: false });
    const marker = `zq${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
    const stored = await ingestMany(p.key, [
      { action: "doc.viewed", actor: { id: "kept1", name: "Kept Person" } },
      { action: "doc.viewed", actor: { id: `${marker}id`, name: "Erin Gone" } },
      { action: "doc.viewed", actor: { id: "kept2", name: "Kept Person" } },
    ]);
    expect(await closedGroupKeys(p.db, p.id)).toEqual([]);
    expect(await searchAll(p.key, marker)).toEqual([stored[1].id]);
    expect((await eraseApplied(p.key, `/v1/actors/${marker}id`)).status).toBe(202);
    // The scrub took the group's entry out (it had none) and made it again from the rows' words: the group is closed.
    const [key] = await groupKeys(p.db, p.id);
    expect(await matches(p.db, searchExpression(["kept"], p.id))).toEqual([key]);
    expect(await matches(p.db, searchExpression([marker], p.id))).toEqual([]);
    const next = (await ingest(p.key, { action: "doc.viewed", actor: { id: "kept3", name: "Kept Person" } })).json.data;
    const keys = await groupKeys(p.db, p.id);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBe(key);
    expect(await searchAll(p.key, marker)).toEqual([]);
    expect(await searchAll(p.key, "kept person")).toEqual([next.id, stored[2].id, stored[0].id]);
    expect(await searchAll(p.key, "erin")).toEqual([]);
  });

  it("a keyed project's groups are blocks of 16 seqs; an erasure in the open block gives it an entry, and the rows that fill the block join it", async () => {
    const p = await createProject();
    const marker = `zq${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
    // 20 events in two commits: seqs 1-16 are one block (its entry written by the commit that filled it), 17-20 the open one.
    const first = await ingestMany(p.key, Array.from({ length: 12 }, (_, i) => ({ action: "doc.viewed", actor: { id: `a${i}`, name: "Kept Person" } })));
    const second = await ingestMany(p.key, [
      ...Array.from({ length: 5 }, (_, i) => ({ action: "doc.viewed", actor: { id: `b${i}`, name: "Kept Person" } })),
      { action: "doc.viewed", actor: { id: `${marker}id`, name: "Erin Gone" } },
      ...Array.from({ length: 2 }, (_, i) => ({ action: "doc.viewed", actor: { id: `c${i}`, name: "Kept Person" } })),
    ]);
    const { results: leads } = await p.db.prepare("SELECT seq, search_lead AS lead, row_id - search_lead AS k FROM events WHERE project_id = ? ORDER BY seq").bind(p.id).all<{ seq: number; lead: number; k: number }>();
    expect(leads.map((r) => r.lead)).toEqual(leads.map((r) => (r.seq - 1) % SEARCH_GROUP));
    const keys = await groupKeys(p.db, p.id);
    expect(keys).toHaveLength(2);
    expect(await closedGroupKeys(p.db, p.id)).toEqual([keys[0]]);
    expect(await matches(p.db, searchExpression(["kept"], p.id))).toEqual([keys[0]]);
    // The erasure scrubs seq 18 in the open block: its entry is made from the block's rows as they are.
    expect((await eraseApplied(p.key, `/v1/actors/${marker}id`)).status).toBe(202);
    expect(await matches(p.db, searchExpression(["kept"], p.id))).toEqual(keys);
    expect(await searchAll(p.key, marker)).toEqual([]);
    // The next commit's rows take seqs 21-24 in the same block, and the block's entry is made again with them.
    const third = await ingestMany(p.key, Array.from({ length: 4 }, (_, i) => ({ action: "doc.viewed", actor: { id: `late${i}`, name: "Late Comer" } })));
    expect(await groupKeys(p.db, p.id)).toEqual(keys);
    expect(await matches(p.db, searchExpression(["late"], p.id))).toEqual([keys[1]]);
    expect(await searchAll(p.key, "late comer")).toEqual(third.map((e) => e.id).reverse());
    expect(await searchAll(p.key, "kept person")).toHaveLength(first.length + second.length - 1);
    expect(await searchAll(p.key, "erin")).toEqual([]);
  });

  it("an erasure rewrites its events' groups: the erased words match nothing, the group's other events still match theirs", async () => {
    const p = await createProject();
    const marker = `zq${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
    const group = Array.from({ length: 16 }, (_, i) => ({ action: "doc.viewed", actor: { id: i === 5 ? `${marker}id` : `acct${i}z`, name: i === 5 ? "Erin Gone" : "Kept Person" } }));
    const stored = await ingestMany(p.key, [...group, ...events.slice(0, 260)]);
    expect(await searchAll(p.key, marker)).toEqual([stored[5].id]);

    expect((await eraseApplied(p.key, `/v1/actors/${marker}id`)).status).toBe(202);
    expect(await matches(p.db, searchExpression([marker], p.id))).toEqual([]);
    expect(await matches(p.db, searchExpression(["erin"], p.id))).toEqual([]);
    expect(await searchAll(p.key, marker)).toEqual([]);
    expect(await searchAll(p.key, "kept acct9z")).toEqual([stored[9].id]);
    // The scrubbed event keeps its action's words.
    expect(await searchAll(p.key, "doc viewed")).toContain(stored[5].id);
    expect((await compactSearchIndex(p.db, 50)).done).toBe(true);
    expect(await pagesHolding(p.db, marker)).toBe(0);
    await p.db.prepare("INSERT INTO events_search (events_search, rank) VALUES ('integrity-check', 0)").run();
  });
});
