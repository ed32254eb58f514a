import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { selectEvents, selectionFor, type Selection, type SelectOptions } from "../../src/model/event-query";
import { MAX_METADATA_FILTERS } from "../../src/catalog/metadata-filters";
import type { Filters } from "../../src/schemas/list-query";
import type { Credential } from "../../src/auth/credential";
import { ledgerOf } from "../../src/chain/ledger";
import { call, createProject, createScopedKey, expectEveryListing, ingestMany, listOrder, listPages } from "../helpers";

const key: Credential = { kind: "api_key", projectId: "p1", prefix: "abc", scopes: ["read"] };
const base = selectionFor(key, {})!;
const sel = (filters: Filters) => selectionFor(key, filters)!;

async function plan(s: Selection, options: Partial<SelectOptions> = {}): Promise<string[]> {
  const st = selectEvents(s, { columns: "e.*", rowKey: null, cursor: null, limit: 51, ...options });
  const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${st.sql}`)
    .bind(...st.params)
    .all<{ detail: string }>();
  return results.map((r) => r.detail);
}

/**
 * A full scan reads every event of every project ("SCAN e" / "SCAN events" without an index), or every
 * project's commit spans ("SCAN commit_spans", even along an index: its indexes all lead with the project or the instant).
 */
const fullScan = (lines: string[]) => lines.some((l) => (/^SCAN (e|events)\b/.test(l) && !/USING/.test(l)) || /^SCAN (s|commit_spans)\b/.test(l));

describe("selectionFor", () => {
  it("folds action, actions and actions_exclude into one include or exclude list", () => {
    expect(sel({ action: "a" }).actions).toEqual(["a"]);
    expect(sel({ actions: ["a", "b"], actions_exclude: ["b", "c"] })).toMatchObject({ actions: ["a"], exclude: [] });
    expect(sel({ actions_exclude: ["b", "c"] })).toMatchObject({ actions: null, exclude: ["b", "c"] });
    expect(sel({ action: "a", actions: ["a", "b"] }).actions).toEqual(["a"]);
    expect(selectionFor(key, { action: "a", actions: ["b"] })).toBeNull();
    expect(selectionFor(key, { action: "a", actions_exclude: ["a"] })).toBeNull();
  });

  it("forces an embed token's organization and finds nothing for another one", () => {
    const embed: Credential = { kind: "embed", projectId: "p1", organization: "org_a", includeMetadata: false };
    expect(selectionFor(embed, {})!.organization).toBe("org_a");
    expect(selectionFor(embed, { organization: "org_a" })!.organization).toBe("org_a");
    expect(selectionFor(embed, { organization: "org_b" })).toBeNull();
    const wholeProject: Credential = { kind: "embed", projectId: "p1", organization: null, includeMetadata: false };
    expect(selectionFor(wholeProject, { organization: "org_b" })!.organization).toBe("org_b");
    expect(selectionFor(wholeProject, {})!.organization).toBeNull();
  });
});

describe("selectEvents query plans (EXPLAIN QUERY PLAN)", () => {
  const at = "2026-05-05T05:05:05.000Z";
  const cases: Array<[string, Selection, string, RegExp?]> = [
    ["no filter", base, "events_project_time_idx"],
    ["organization", sel({ organization: "o" }), "events_org_time_idx"],
    ["actor_id", sel({ actor_id: "u" }), "events_actor_time_idx"],
    ["action", sel({ action: "a" }), "events_action_time_idx"],
    ["actions_exclude", sel({ actions_exclude: ["a", "b"] }), "events_project_time_idx"],
    ["date_from", sel({ date_from: at }), "events_project_time_idx", /occurred_at>\?/],
    ["date_to", sel({ date_to: at }), "events_project_time_idx", /occurred_at<\?|\(occurred_at,seq\)<\(\?,\?\)/],
    ["organization + date range", sel({ organization: "o", date_from: at, date_to: at }), "events_org_time_idx", /organization=\? AND occurred_at>\? AND (occurred_at<\?|\(occurred_at,seq\)<\(\?,\?\))/],
    ["actor_id + organization + action", sel({ actor_id: "u", organization: "o", action: "a" }), "events_actor_time_idx"],
  ];

  for (const [name, s, index, seek] of cases) {
    it(`${name}: walks ${index} in list order, no full scan, no sort`, async () => {
      for (const cursor of [null, { occurredAt: at, seq: 7 }, { occurredAt: at, seq: null }]) {
        const lines = await plan(s, { cursor });
        const text = lines.join("\n");
        expect(fullScan(lines), text).toBe(false);
        expect(text).toMatch(new RegExp(`SEARCH e USING (COVERING )?INDEX ${index} \\(project_id=\\?`));
        if (index === "events_project_time_idx") {
          // The time walk (migration 0040): the index's entries and the live spans' rows by seq, each in list order and
          // stopped at the page, then merged; the only sorts are that merge's and the page's, of a page or two of rows.
          expect(text).toMatch(/SEARCH s USING INDEX commit_spans_live_time_idx \(project_id=\?( AND received_at[<>]\?)*\)/);
          expect(text).toContain("SEARCH e USING INDEX events_project_seq_idx (project_id=? AND seq>? AND seq<?)");
          expect(text, "a span's rows sorted instead of walked").not.toContain("RIGHT PART");
          expect(lines.filter((l) => l === "USE TEMP B-TREE FOR ORDER BY"), text).toHaveLength(2);
        } else if (index === "events_action_time_idx" || index === "events_org_time_idx") {
          // The set walk (migrations 0041, 0042): the index's entries and the value's sets newest first, each set's rows
          // looked up by seq and sorted (a set's rows, at most a commit's), then merged; then the page.
          const column = index === "events_action_time_idx" ? "action" : "organization";
          expect(text).toMatch(new RegExp(`SEARCH s USING PRIMARY KEY \\(project_id=\\? AND ${column}=\\?( AND received_at[<>]\\?)*\\)`));
          // (rowid<?: the older path's rows only, row-keys.ts; the index holds the row id after the seq.)
          expect(text).toContain("SEARCH e USING INDEX events_project_seq_idx (project_id=? AND seq=? AND rowid<?)");
          expect(lines.filter((l) => l === "USE TEMP B-TREE FOR LAST TERM OF ORDER BY"), text).toHaveLength(1);
          expect(lines.filter((l) => l === "USE TEMP B-TREE FOR ORDER BY"), text).toHaveLength(2);
        } else {
          expect(text, "sorted instead of walking the index").not.toContain("TEMP B-TREE");
        }
        if (seek) expect(lines.join("\n")).toMatch(seek);
        if (cursor?.seq) expect(lines.join("\n")).toMatch(/\(occurred_at,seq\)<\(\?,\?\)|occurred_at<\?/);
      }
    });
  }

  it("ip_address: its index entries and its live sets in list order, its runs' events by seq range, or the list walk when common; never a scan", async () => {
    const ip = "203.0.113.1";
    const shapes: Array<[Filters, Partial<SelectOptions>, string]> = [
      [{ ip_address: ip }, {}, "events_project_time_idx"],
      [{ ip_address: ip, organization: "o", date_from: at }, {}, "events_org_time_idx"],
      [{ ip_address: ip, action: "a" }, {}, "events_action_time_idx"],
      [{ ip_address: ip, actions: ["a", "b"] }, {}, "events_action_time_idx"],
      [{ ip_address: ip, actions_exclude: ["a"] }, { window: 102 }, "events_project_time_idx"],
    ];
    for (const [filters, options, dense] of shapes) {
      for (const cursor of [null, { occurredAt: at, seq: 7 }]) {
        const lines = await plan(sel(filters), { cursor, ...options });
        const text = lines.join("\n");
        expect(fullScan(lines), text).toBe(false);
        expect(text).toMatch(/SEARCH e USING (COVERING )?INDEX events_ip_time_idx \(project_id=\? AND ip_address=\?/);
        expect(text).toMatch(/SEARCH r USING PRIMARY KEY \(project_id=\? AND ip=\?\)/);
        // Its live sets (migration 0043), newest first, each set's rows by seq.
        expect(text).toMatch(/SEARCH s USING PRIMARY KEY \(project_id=\? AND ip_address=\?/);
        expect(text).toMatch(/SEARCH x USING INDEX events_project_seq_idx \(project_id=\? AND seq>\? AND seq<\?\)/);
        expect(text).toMatch(new RegExp(`SEARCH e USING (COVERING )?INDEX ${dense} \\(project_id=\\?`));
      }
    }
  });

  it("a keyed project (row-keys.ts): every walk reads its rows by seq as ranges of row ids, never the seq index, never a scan, with the same sorts", async () => {
    const shapes: Filters[] = [
      {}, { organization: "o" }, { action: "a" }, { actions: ["a", "b"] }, { ip_address: "10.0.0.1" }, { ip_address: "10.0.0.1", action: "a" },
      { target_type: "doc" }, { target_type: "doc", organization: "o" }, { actor_id: "u", date_from: at },
    ];
    for (const filters of shapes) {
      for (const cursor of [null, { occurredAt: at, seq: 7 }]) {
        const older = await plan(sel(filters), { cursor });
        const keyed = await plan(sel(filters), { cursor, rowKey: 1 });
        const text = keyed.join("\n");
        expect(fullScan(keyed), text).toBe(false);
        expect(text, JSON.stringify(filters)).not.toContain("events_project_seq_idx");
        const sorts = (lines: string[]) => lines.filter((l) => l.startsWith("USE TEMP B-TREE")).sort();
        expect(sorts(keyed), text).toEqual(sorts(older));
      }
    }
    const search = (await plan(sel({ organization: "o" }), { rowKey: 1, match: { expression: '"log"*', terms: ["log"] } })).join("\n");
    expect(search).not.toContain("events_project_seq_idx");
    expect(search).toContain("SEARCH e USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)");
  });

  it("several actions: one ordered branch per action on the action index and its sets; each sorts at most a page", async () => {
    const many = sel({ actions: Array.from({ length: 50 }, (_, i) => `a.${i}`) });
    const lines = await plan(many, { cursor: { occurredAt: at, seq: 3 } });
    expect(fullScan(lines)).toBe(false);
    expect(lines.filter((l) => l.includes("USING COVERING INDEX events_action_time_idx (project_id=? AND action=?"))).toHaveLength(50);
    // Each action's sets too (migration 0041), walked in list order from the cursor's instant.
    expect(lines.filter((l) => l.startsWith("SEARCH s USING PRIMARY KEY (project_id=? AND action=? AND received_at<?)"))).toHaveLength(50);
    expect(lines).toContain("SEARCH e USING INTEGER PRIMARY KEY (rowid=?)");
  });

  it("excluded actions within a window: walks the list index for the window, then looks each event up by rowid", async () => {
    for (const filters of [{}, { organization: "o" }, { actor_id: "u", date_from: at }]) {
      const lines = await plan(sel({ ...filters, actions_exclude: ["a", "b"] }), { cursor: { occurredAt: at, seq: 3 }, window: 102 });
      expect(fullScan(lines), lines.join("\n")).toBe(false);
      expect(lines.join("\n")).toMatch(/SEARCH e USING (COVERING )?INDEX events_(project|org|actor)_time_idx \(project_id=\?/);
      expect(lines).toContain("SEARCH e USING INTEGER PRIMARY KEY (rowid=?)");
    }
  });

  it("full-text match: walks the FTS hits and reads each hit's group by rowid range, and the project's newest rows for its open group", async () => {
    const lines = await plan(sel({ organization: "o" }), { match: { expression: '"log"*', terms: ["log"] } });
    const text = lines.join("\n");
    expect(fullScan(lines), text).toBe(false);
    expect(lines.some((l) => /^SCAN f VIRTUAL TABLE INDEX/.test(l)), text).toBe(true);
    expect(lines, text).toContain("SEARCH e USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)");
    // The open group: a range of the (project, seq) index from the project's newest seq back 16.
    expect(text).toMatch(/SEARCH e USING INDEX events_project_seq_idx \(project_id=\? AND seq>\? AND seq<\?\)/);
    // Probed: the index read once, its hits (up to one past the probe) kept for the count and the walk.
    const probed = await plan(sel({ organization: "o" }), { match: { expression: '"log"*', terms: ["log"], probe: 500 } });
    const all = probed.join("\n");
    expect(fullScan(probed), all).toBe(false);
    expect(probed.filter((l) => /^SCAN (f|events_search) VIRTUAL TABLE/.test(l)), all).toEqual(["SCAN events_search VIRTUAL TABLE INDEX 0:M1"]);
    expect(probed, all).toContain("MATERIALIZE hits");
    expect(probed, all).toContain("SCAN f");
    expect(probed, all).toContain("SEARCH e USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)");
    expect(all).toMatch(/events_project_seq_idx \(project_id=\? AND seq>\? AND seq<\?\)/);
  });

  it("target filters: walk the first- and second-target indexes and event_targets in list order, each to the page's end, never a scan", async () => {
    for (const [filters, by, others] of [
      [{ target_type: "doc", target_id: "d1" }, "id", /SEARCH t USING PRIMARY KEY \(project_id=\? AND type=\? AND id=\?/],
      [{ target_type: "doc" }, "type", /SEARCH t USING (COVERING )?INDEX event_targets_type_time_idx \(project_id=\? AND type=\?/],
      [{ target_type: "doc", organization: "o", date_from: at }, "type", /event_targets_type_time_idx/],
    ] as const) {
      const lines = await plan(sel(filters), { cursor: { occurredAt: at, seq: 3 } });
      const text = lines.join("\n");
      expect(fullScan(lines), text).toBe(false);
      for (const place of ["first", "second"]) {
        expect(text).toMatch(new RegExp(`SEARCH e USING INDEX events_${place}_target_${by}_idx \\(project_id=\\? AND <expr>=\\?`));
      }
      expect(text).toMatch(others);
      // A type alone: its sets at either place, their rows read by range (a set of every row of its range) or looked up by
      // offset (migration 0039), and the other filters' list index for a common type.
      const sets = by === "type" ? 1 : 0;
      expect(lines.filter((l) => l === "SEARCH s USING PRIMARY KEY (project_id=? AND at=? AND type=?)"), text).toHaveLength(2 * sets);
      expect(lines.filter((l) => l === "SEARCH x USING COVERING INDEX events_project_seq_idx (project_id=? AND seq>? AND seq<?)"), text).toHaveLength(sets);
      expect(lines.filter((l) => l === "SEARCH x USING COVERING INDEX events_project_seq_idx (project_id=? AND seq=? AND rowid<?)"), text).toHaveLength(sets);
      const time = !("organization" in filters);
      const list = time ? "events_project_time_idx (project_id=? AND (occurred_at,seq)<(?,?))" : "events_org_time_idx (project_id=? AND organization=?";
      expect(lines.filter((l) => l.startsWith(`SEARCH e USING INDEX ${list}`)), text).toHaveLength(sets);
      // Every other walk is in list order and stops at the limit: the sorts are the sets' rows (read whole), the merge of
      // the list walk's two walks (the time index's and the live spans', timeWalk, or the organization index's and its
      // sets', setWalk: SQLite sorts each walk's page, then merges them), an organization set's rows, and the page's.
      const merges = sets;
      const spans = time ? merges : 0;
      expect(lines.filter((l) => l.startsWith("SEARCH s USING INDEX commit_spans_live_time_idx")), text).toHaveLength(spans);
      expect(lines.filter((l) => l.startsWith("SEARCH s USING PRIMARY KEY (project_id=? AND organization=?")), text).toHaveLength(merges - spans);
      expect(lines.filter((l) => l === "USE TEMP B-TREE FOR LAST TERM OF ORDER BY"), text).toHaveLength(merges - spans);
      expect(lines.filter((l) => l === "USE TEMP B-TREE FOR ORDER BY"), text).toHaveLength(1 + sets + 2 * merges);
      expect(lines.at(-1), text).toBe("USE TEMP B-TREE FOR ORDER BY");
    }
  });

  it("keeps every statement under D1's 100 bound parameters", () => {
    const fifty = Array.from({ length: 50 }, (_, i) => `a.${i}`);
    const filters = { organization: "o", actor_id: "u", ip_address: "i", date_from: at, date_to: at, actions_exclude: fifty };
    const cursor = { occurredAt: at, seq: 1 };
    // The most terms a search takes (search-query.ts MAX_TERMS), each bound once more for the group check.
    const eight = { expression: '"x"*', terms: ["aa", "bb", "cc", "dd", "ee", "ff", "gg", "hh"] };
    for (const rowKey of [null, 1]) {
      const excluded = selectEvents(sel(filters), { columns: "e.*", rowKey, cursor, limit: 10, match: eight });
      expect(excluded.params.length).toBeLessThanOrEqual(100);
      const both = sel({ ...filters, actions: [...fifty.slice(40), ...fifty.map((a) => `${a}.x`)].slice(0, 50) });
      expect(both.actions).toHaveLength(40);
      for (const match of [undefined, eight]) {
        expect(selectEvents(both, { columns: "e.*", rowKey, cursor, limit: 5, match }).params.length).toBeLessThanOrEqual(100);
      }
    }
  });

  it("keeps every statement under D1's 100,000 bytes of SQL, with the most actions a list names", async () => {
    // Values are bound, so the text grows with the walks: one per action (each its index entries and its sets). Local D1
    // refuses a longer statement as D1 does (SQLITE_TOOBIG past 100,000 bytes), so each one is also run.
    const fifty = Array.from({ length: 50 }, (_, i) => `a.${i}`);
    const cursor = { occurredAt: at, seq: 1 };
    for (const filters of [
      { actions: fifty },
      { actions: fifty, ip_address: "i" },
      { actions: fifty, ip_address: "i", organization: "o", date_from: at, date_to: at },
      { actions: fifty, ip_address: "i", date_from: at, target_type: "doc" },
      { actions: fifty, target_type: "doc", organization: "o" },
      { actions_exclude: fifty, ip_address: "i", date_from: at },
    ]) {
      // The most metadata filters a request takes (catalog/metadata-filters.ts), each a condition on every walk.
      const metadata = Array.from({ length: MAX_METADATA_FILTERS }, (_, i) => ({ key: `k${i}`, value: `v${i}` }));
      // Both layouts: a keyed project's walks read its rows by row id (row-keys.ts).
      for (const options of [{ rowKey: null }, { rowKey: 8191 }, { rowKey: null, window: 102 }, { rowKey: 8191, window: 102 }]) {
        const { sql, params } = selectEvents({ ...sel(filters), metadata }, { columns: "e.*", cursor, limit: 51, ...options });
        expect(new TextEncoder().encode(sql).length, JSON.stringify(filters)).toBeLessThan(100_000);
        const { results } = await env.DB.prepare(sql).bind(...params).all<{ n?: number }>();
        // An exclusion's window answers the number of events it looked at, in a row of its own when it keeps none.
        if ("window" in options && "actions_exclude" in filters) expect(results.map((r) => r.n)).toEqual([0]);
        else expect(results).toEqual([]);
      }
    }
  });
});

describe("the time walk over live commits (migration 0040)", () => {
  type Sent = { id: string; seq: number; occurred_at: string; action: string; ip_address: string | null; targets: Array<{ type: string }>; metadata: { i: number } };
  const ip = "198.51.100.7";
  const event = (i: number, occurredAt?: string) => ({
    action: ["doc.read", "doc.write", "user.login"][i % 3],
    actor: { id: `u_${i % 4}` },
    targets: [{ type: i % 5 === 0 ? "team" : "document", id: `t_${i}` }],
    metadata: { i },
    ...(occurredAt ? { occurred_at: occurredAt } : {}),
  });
  const later = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();

  /**
   * Live batches (their rows are at their span's instant, with no time index
   * entry), backdated rows at exactly a live batch's instant and between two
   * of them, a batch that mixes live and backdated rows, lone live and lone
   * backdated events, and a live commit of two.
   */
  async function seeded() {
    const p = await createProject();
    const sent: Sent[] = [];
    const batch = async (events: unknown[], from = ip) => sent.push(...(await ingestMany(p.key, events, { ip: from })));
    const lone = async (body: unknown, from = ip) => {
      const res = await call("POST", "/v1/events", { key: p.key, body, ip: from });
      expect(res.status).toBe(201);
      sent.push(res.json.data);
    };
    await batch(Array.from({ length: 12 }, (_, i) => event(i)));
    const first = sent[0].occurred_at;
    await batch([event(12, first), event(13, later(first, 1)), event(14, "2026-01-01T00:00:00.000Z"), event(15, first)]);
    await lone(event(16), "203.0.113.3");
    await batch(Array.from({ length: 9 }, (_, i) => event(17 + i)));
    await batch([event(26), event(27, first), event(28), event(29, later(first, 2)), event(30)], "203.0.113.3");
    await lone(event(31, later(first, 1)));
    await batch([event(32), event(33)]);
    return { ...p, sent, first };
  }

  it("lists every event once, in list order, across the index's entries and the live spans, whole and by page", async () => {
    const p = await seeded();
    const timed = await p.db.prepare("SELECT time_in_span, count(*) AS n FROM events WHERE project_id = ? GROUP BY time_in_span").bind(p.id).all();
    // The live rows of the commits of two or more: 12 + 9 + 3 + 2; the rest keep their entries.
    expect(timed.results).toEqual([{ time_in_span: 0, n: 8 }, { time_in_span: 1, n: 26 }]);
    const spans = await p.db.prepare("SELECT live, count(*) AS n FROM commit_spans WHERE project_id = ? GROUP BY live").bind(p.id).all();
    expect(spans.results).toEqual([{ live: 0, n: 1 }, { live: 1, n: 4 }]);
    const all = () => true;
    const mid = later(p.first, 1);
    const reads: Array<[string, (e: Sent) => boolean]> = [
      ["", all],
      [`date_from=${p.first}`, (e) => e.occurred_at >= p.first],
      [`date_to=${mid}`, (e) => e.occurred_at <= mid],
      [`date_from=${p.first}&date_to=${mid}`, (e) => e.occurred_at >= p.first && e.occurred_at <= mid],
      ["actions_exclude=doc.read", (e) => e.action !== "doc.read"],
      [`ip_address=${ip}`, (e) => e.ip_address === ip],
      [`ip_address=${ip}&actions_exclude=user.login`, (e) => e.ip_address === ip && e.action !== "user.login"],
      ["target_type=document", (e) => e.targets[0].type === "document"],
      ["target_type=team&actions_exclude=doc.write", (e) => e.targets[0].type === "team" && e.action !== "doc.write"],
    ];
    await expectEveryListing(p.key, p.sent, reads);
    const exported = await call("GET", "/v1/exports?format=json", { key: p.key });
    expect((JSON.parse(exported.text) as Sent[]).map((e) => e.seq)).toEqual(listOrder(p.sent, all));
    for (const e of p.sent) expect((await call("GET", `/v1/events/${e.id}`, { key: p.key })).json.data.seq).toBe(e.seq);
  });

  it("lists an archived part of a live commit once when it is restored inside the commit's span", async () => {
    const p = await createProject();
    const sent: Sent[] = await ingestMany(p.key, Array.from({ length: 20 }, (_, i) => event(i)), { ip });
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    expect((await ledgerOf(env, p.id).archiveSegment(new Date().toISOString(), { segmentRows: 6 })).archived).toBe(6);
    await env.DB.prepare("UPDATE projects SET hot_days = NULL WHERE id = ?").bind(p.id).run();
    // The span stays with the commit's hot rows, and still covers the archived ones' seqs.
    expect((await p.db.prepare("SELECT first_seq, last_seq, live FROM commit_spans WHERE project_id = ?").bind(p.id).all()).results).toEqual([{ first_seq: 1, last_seq: 20, live: 1 }]);
    const { key: admin } = await createScopedKey(p.id, ["admin"]);
    expect((await call("POST", "/v1/project/restore-archive", { key: admin })).json.data).toMatchObject({ status: "done", restored: 6 });
    // A restore marks none of its rows: they are in the time index, and the walk of the span leaves them to it.
    const restored = await p.db.prepare("SELECT seq FROM events WHERE project_id = ? AND seq <= 20 AND time_in_span = 0 ORDER BY seq").bind(p.id).all();
    expect(restored.results.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    const restoreRecord = (await call("GET", "/v1/events?action=witness.archive.restored", { key: p.key })).json.data;
    const all = [...sent, ...restoreRecord];
    for (const limit of [2, 5, 200]) expect(await listPages(p.key, "/v1/events", "", limit), `by ${limit}`).toEqual(listOrder(all, () => true));
  });
});

describe("wide lists through HTTP", () => {
  it("lists an address's events by 4 metadata fields that 50 actions declare: one walk per action, in one statement D1 takes", async () => {
    const p = await createProject();
    const ip = "198.51.100.50";
    const actions = Array.from({ length: 50 }, (_, i) => `app.action.${String(i).padStart(2, "0")}`);
    const schema = {
      metadata: { type: "object", properties: { role: { type: "string" }, plan: { type: "string" }, seats: { type: "integer" }, sso: { type: "boolean" } } },
      filterable: ["role", "plan", "seats", "sso"],
    };
    for (const action of actions) expect((await call("PUT", `/v1/schemas/${action}`, { key: p.key, body: schema })).status).toBe(201);
    // Each filter narrows the list to the 50 declaring actions (catalog/metadata-filters.ts), each walked on its own with
    // every other filter: 117 KB of SQL before the walks were merged once (D1 refuses past 100,000 bytes), 72 KB now.
    const event = (i: number) => ({ action: actions[i % 50], targets: [{ type: "doc", id: `d_${i % 2}` }], metadata: { role: i % 3 ? "admin" : "viewer", plan: "pro", seats: 5, sso: true } });
    const sent: Array<{ seq: number; occurred_at: string; action: string; ip_address: string | null; metadata: { role: string }; targets: Array<{ id: string }> }> = [
      ...(await ingestMany(p.key, Array.from({ length: 100 }, (_, i) => event(i)), { ip })),
      ...(await ingestMany(p.key, Array.from({ length: 50 }, (_, i) => event(i)), { ip: "203.0.113.50" })),
    ];
    const fields = "metadata.role=admin&metadata.plan=pro&metadata.seats=5&metadata.sso=true";
    for (const limit of [7, 200]) {
      expect(await listPages(p.key, "/v1/events", `ip_address=${ip}&${fields}`, limit), `by ${limit}`).toEqual(
        listOrder(sent, (e) => e.ip_address === ip && e.metadata.role === "admin"),
      );
      // With a target and dates as well, the walks would still pass the limit: the address's walk checks each row's action.
      expect(await listPages(p.key, "/v1/events", `ip_address=${ip}&${fields}&target_type=doc&target_id=d_1&date_from=2020-01-01T00:00:00.000Z`, limit)).toEqual(
        listOrder(sent, (e) => e.ip_address === ip && e.metadata.role === "admin" && e.targets[0].id === "d_1"),
      );
    }
  });
});
