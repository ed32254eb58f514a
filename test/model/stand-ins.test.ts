import { describe, expect, it } from "vitest";
import { call, createProject, freshIp, ingestMany, listPages } from "../helpers";
import { missingGroupsSql } from "../../src/model/search-index";

type Sent = { id: string; seq: number; occurred_at: string };

/**
 * A database writer who deletes or alters a row that stands in for index
 * entries (a commit's span, an address run, a target type set, an action,
 * organization or address set, a project's tag row, a row of event_targets) hides intact events from
 * lists, reads by id or receipts: verify must say so, naming the first event
 * hidden, and be ok again once the row is put back. One planted where it
 * cannot hide anything must list nothing.
 */
describe("verify and the rows standing in for index entries", () => {
  const event = (action: string, i: number) => ({ action, actor: { id: `u_${i}` }, targets: [{ type: "document", id: `d_${i}` }] });
  const backdated = (i: number) => ({ ...event("doc.share", i), targets: [{ type: "document", id: `d_${i}` }, { type: "team", id: `t_${i}` }], occurred_at: "2026-03-03T03:03:03.000Z" });

  /**
   * Two live batches from one address, the first repeating doc.read (a set)
   * and naming user.login twice (entries), then a backdated batch (its rows
   * keep their time and action entries) with two targets each (type sets at
   * both places).
   */
  async function seeded() {
    const p = await createProject();
    const ip = freshIp();
    const actions = ["doc.read", "doc.read", "user.login", "doc.read", "user.login", "doc.read", "doc.read", "doc.read"];
    const sent: Sent[] = await ingestMany(p.key, actions.map(event), { ip });
    sent.push(...(await ingestMany(p.key, [0, 1, 2, 3].map((i) => event("doc.write", 10 + i)), { ip })));
    sent.push(...(await ingestMany(p.key, [0, 1, 2].map((i) => backdated(20 + i)), { ip })));
    const verify = async (query = "") => (await call("GET", `/v1/events/verify${query}`, { key: p.key })).json.data;
    const seqsOf = (query: string) => listPages(p.key, "/v1/events", query, 5);
    const read = async (seq: number) => (await call("GET", `/v1/events/${sent[seq - 1].id}`, { key: p.key })).status;
    return { ...p, ip, sent, verify, seqsOf, read };
  }

  /**
   * Runs `tamper` (SQL on the project's shard, ?1 its id), checks that event
   * `hidden` is gone from `query`'s list (or, for "id", from reads by id) and
   * that verify names it, and puts the shard back.
   */
  async function tampered(p: Awaited<ReturnType<typeof seeded>>, table: string, tamper: string, hidden: number, query: string) {
    const found = async () => (query === "id" ? (await p.read(hidden)) === 200 : (await p.seqsOf(query)).includes(hidden));
    const before = await p.db.prepare(`SELECT * FROM ${table} WHERE project_id = ?`).bind(p.id).all<Record<string, unknown>>();
    expect(await found()).toBe(true);
    await p.db.prepare(tamper).bind(p.id).run();
    expect(await found()).toBe(false);
    const result = await p.verify();
    expect(result).toMatchObject({ ok: false, verified: hidden - 1, failure: { event_id: p.sent[hidden - 1].id, reason: "index_damaged", at: p.sent[hidden - 1].occurred_at } });
    await p.db.prepare(`DELETE FROM ${table} WHERE project_id = ?`).bind(p.id).run();
    for (const row of before.results) {
      const columns = Object.keys(row);
      await p.db.prepare(`INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`).bind(...Object.values(row)).run();
    }
    expect(await found()).toBe(true);
    expect(await p.verify()).toMatchObject({ ok: true, verified: p.sent.length, failure: null });
  }

  it("names the first event a deleted or altered span, run or set hides from lists, and is ok once it is back", async () => {
    const p = await seeded();
    expect(await p.verify()).toMatchObject({ ok: true, verified: 15, failure: null });
    // The backdated batch's span: its ids are not found (the rows keep their time index entries).
    await tampered(p, "commit_spans", "DELETE FROM commit_spans WHERE project_id = ? AND first_seq = 13", 13, "id");
    // The second batch's span: its events are gone from the list in time order (and their ids' span).
    await tampered(p, "commit_spans", "DELETE FROM commit_spans WHERE project_id = ? AND first_seq = 9", 9, "");
    // The first batch's instant moved: lists between dates read the span at the wrong time.
    await tampered(p, "commit_spans", "UPDATE commit_spans SET received_at = '2026-01-01T00:00:00.000Z' WHERE project_id = ? AND first_seq = 1 AND live = 1", 1, `date_from=${encodeURIComponent(p.sent[0].occurred_at)}`);
    // The address's run of the backdated batch (its rows have their own time, so no live set).
    await tampered(p, "ip_runs", "DELETE FROM ip_runs WHERE project_id = ? AND first_seq = 13", 13, `ip_address=${p.ip}`);
    // The address's live set of the first batch, and of the second without its third member (seq 11, offset 2).
    await tampered(p, "address_sets", "DELETE FROM address_sets WHERE project_id = ? AND first_seq = 1", 1, `ip_address=${p.ip}`);
    await tampered(p, "address_sets", "UPDATE address_sets SET seqs = '[0,1,3]' WHERE project_id = ? AND first_seq = 9", 11, `ip_address=${p.ip}`);
    // The document type set of the second batch, renamed.
    await tampered(p, "target_type_sets", "UPDATE target_type_sets SET type = 'folder' WHERE project_id = ? AND first_seq = 9", 9, "target_type=document");
    // The team set at the second place (the backdated batch's second targets).
    await tampered(p, "target_type_sets", "DELETE FROM target_type_sets WHERE project_id = ? AND at = 1", 13, "target_type=team");
    // doc.read's set without its second member (seq 2, offset 1).
    await tampered(p, "action_sets", "UPDATE action_sets SET seqs = '[0,3,5,6,7]' WHERE project_id = ? AND action = 'doc.read' AND first_seq = 1", 2, "action=doc.read");
    // Its text no JSON: the walk reads no offset of it (the list answers, without them) and verify names the first.
    await tampered(p, "action_sets", "UPDATE action_sets SET seqs = '[0,1,3' WHERE project_id = ? AND action = 'doc.read' AND first_seq = 1", 1, "action=doc.read");
  });

  it("lists every event once when a second set holds rows a set holds, and names the first event a planted second span holds", async () => {
    const p = await seeded();
    const listed = await p.seqsOf("action=doc.read");
    expect(listed).toEqual([8, 7, 6, 4, 2, 1]);
    // A second doc.read set naming seqs 4, 6 and 7: a walk that took each set's rows filled its page with them twice,
    // the page kept them once and came up short, and a short page ended the list (1 and 2 were lost, verify named 4).
    // The walk takes a row once, whichever sets name it, so the set hides nothing and verify has nothing to report.
    await p.db.prepare("INSERT INTO action_sets (project_id, action, received_at, first_seq, last_seq, seqs) SELECT project_id, action, received_at, 4, 7, '[0,2,3]' FROM action_sets WHERE project_id = ?1 AND action = 'doc.read' AND first_seq = 1").bind(p.id).run();
    expect(await p.seqsOf("action=doc.read")).toEqual(listed);
    expect(await listPages(p.key, "/v1/events", "action=doc.read", 2)).toEqual(listed);
    expect(await p.verify()).toMatchObject({ ok: true, verified: 15, failure: null });
    await p.db.prepare("DELETE FROM action_sets WHERE project_id = ? AND first_seq = 4").bind(p.id).run();
    // The same set keyed far from the rows it names (first_seq 2,000 past them, offsets below 0): the walk adds its
    // offsets all the same, and takes each row once.
    await p.db.prepare("INSERT INTO action_sets (project_id, action, received_at, first_seq, last_seq, seqs) SELECT project_id, action, received_at, 2004, 2007, '[-2000,-1998,-1997]' FROM action_sets WHERE project_id = ?1 AND action = 'doc.read' AND first_seq = 1").bind(p.id).run();
    expect(await p.seqsOf("action=doc.read")).toEqual(listed);
    expect(await p.verify()).toMatchObject({ ok: true, verified: 15, failure: null });
    // Such a set is all the action's set there is for rows it names: with the commit's own set gone, the far one
    // still lists 4, 6 and 7, and verify names 1, the first row no set names.
    await p.db.prepare("DELETE FROM action_sets WHERE project_id = ? AND first_seq = 1").bind(p.id).run();
    expect(await p.seqsOf("action=doc.read")).toEqual([7, 6, 4]);
    expect(await p.verify()).toMatchObject({ ok: false, verified: 0, failure: { event_id: p.sent[0].id, reason: "index_damaged" } });
    await p.db.prepare("INSERT INTO action_sets (project_id, action, received_at, first_seq, last_seq, seqs) SELECT project_id, action, received_at, 1, 8, '[0,1,3,5,6,7]' FROM action_sets WHERE project_id = ?1 AND first_seq = 2004").bind(p.id).run();
    await p.db.prepare("DELETE FROM action_sets WHERE project_id = ? AND first_seq = 2004").bind(p.id).run();
    expect(await p.verify()).toMatchObject({ ok: true, verified: 15, failure: null });
    // A second live span over the first batch's rows 2-8, at its instant: the time walk is still one a row.
    await p.db.prepare("INSERT INTO commit_spans (received_at, project_id, first_seq, last_seq, live) SELECT received_at, project_id, 2, 8, 1 FROM commit_spans WHERE project_id = ?1 AND first_seq = 1").bind(p.id).run();
    expect(await p.verify()).toMatchObject({ ok: false, verified: 1, failure: { event_id: p.sent[1].id, reason: "index_damaged" } });
  });

  it("lists the events of a set split in two out of order in list order, on pages of any size", async () => {
    const p = await seeded();
    const pages = () => listPages(p.key, "/v1/events", "action=doc.read", 2);
    expect(await pages()).toEqual([8, 7, 6, 4, 2, 1]);
    // doc.read's set (rows 1, 2, 4, 6, 7, 8) split in two, each row named once: one keyed at seq 1 naming 4, 6, 7
    // and 8, and one keyed at seq 5 naming 1 and 2 (offsets below 0). A walk that read a commit's sets by key,
    // highest first, read 2, 1, 8, 7, 6, 4: a page of 2 stopped at the third, showed 8 and 2, and its cursor (seq 2)
    // passed over 7, 6 and 4. The walk orders an instant's rows by their own seq, whichever set names them.
    await p.db.batch([
      p.db.prepare("INSERT INTO action_sets (project_id, action, received_at, first_seq, last_seq, seqs) SELECT project_id, action, received_at, 5, 5, '[-4,-3]' FROM action_sets WHERE project_id = ?1 AND action = 'doc.read' AND first_seq = 1").bind(p.id),
      p.db.prepare("UPDATE action_sets SET seqs = '[3,5,6,7]' WHERE project_id = ? AND action = 'doc.read' AND first_seq = 1").bind(p.id),
    ]);
    expect(await pages()).toEqual([8, 7, 6, 4, 2, 1]);
    expect(await listPages(p.key, "/v1/events", "action=doc.read", 3)).toEqual([8, 7, 6, 4, 2, 1]);
    expect(await p.verify()).toMatchObject({ ok: true, verified: 15, failure: null });
    // Without the set keyed at 5, rows 1 and 2 are in no set: gone from the list, and verify names the first.
    await p.db.prepare("DELETE FROM action_sets WHERE project_id = ? AND action = 'doc.read' AND first_seq = 5").bind(p.id).run();
    expect(await pages()).toEqual([8, 7, 6, 4]);
    expect(await p.verify()).toMatchObject({ ok: false, verified: 0, failure: { event_id: p.sent[0].id, reason: "index_damaged" } });
  });

  it("names a set whose offsets a writer hid in a string, and lists every event once when it repeats an offset", async () => {
    const p = await seeded();
    const listed = await p.seqsOf("action=doc.read");
    expect(listed).toEqual([8, 7, 6, 4, 2, 1]);
    // doc.read's set names its rows 1, 2, 4, 6, 7 and 8 by offset. Offset 1 inside a string: found by a search of the
    // text, never by the walk, which reads json_each's values (the string is offset 0 again).
    await p.db.prepare(`UPDATE action_sets SET seqs = '[0,",1,",3,5,6,7]' WHERE project_id = ? AND action = 'doc.read'`).bind(p.id).run();
    expect(await p.seqsOf("action=doc.read")).toEqual([8, 7, 6, 4, 1]);
    expect(await p.verify()).toMatchObject({ ok: false, verified: 1, failure: { event_id: p.sent[1].id, reason: "index_damaged" } });
    // The same in a nested array.
    await p.db.prepare("UPDATE action_sets SET seqs = '[0,[1],3,5,6,7]' WHERE project_id = ? AND action = 'doc.read'").bind(p.id).run();
    expect(await p.seqsOf("action=doc.read")).toEqual([8, 7, 6, 4, 1]);
    expect(await p.verify()).toMatchObject({ ok: false, verified: 1, failure: { event_id: p.sent[1].id, reason: "index_damaged" } });
    // An offset named three times: a page of 5 filled with row 6 three times came up short and ended the list there.
    await p.db.prepare("UPDATE action_sets SET seqs = '[0,1,3,5,5,5,6,7]' WHERE project_id = ? AND action = 'doc.read'").bind(p.id).run();
    expect(await p.seqsOf("action=doc.read")).toEqual(listed);
    expect(await p.verify()).toMatchObject({ ok: true, verified: 15, failure: null });
  });

  it("lists every event once when a span or set is planted at another instant over rows that one already holds", async () => {
    const p = await seeded();
    // An older doc.read, with its own index entries, after the set's rows in list order.
    p.sent.push(...(await ingestMany(p.key, [{ ...event("doc.read", 30), occurred_at: "2026-02-02T02:02:02.000Z" }], { ip: p.ip })));
    const inOrder = await p.seqsOf("");
    const read = () => listPages(p.key, "/v1/events", "action=doc.read", 3);
    expect(inOrder).toEqual([12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 15, 14, 13, 16]);
    expect(await read()).toEqual([8, 7, 6, 4, 2, 1, 16]);
    // A live span over the first batch's rows and a doc.read set over its doc.read rows, both at an instant before
    // theirs: a walk that took the rows they name at their word listed those rows twice, and a page that the
    // duplicates filled came up short and ended the list (13 and 16 were lost). The walks take a row only at its own instant.
    const before = "2026-01-01T00:00:00.000Z";
    await p.db.prepare("INSERT INTO commit_spans (received_at, project_id, first_seq, last_seq, live) VALUES (?2, ?1, 1, 8, 1)").bind(p.id, before).run();
    await p.db.prepare("INSERT INTO action_sets (project_id, action, received_at, first_seq, last_seq, seqs) SELECT project_id, action, ?2, first_seq, last_seq, seqs FROM action_sets WHERE project_id = ?1 AND action = 'doc.read'").bind(p.id, before).run();
    expect(await p.seqsOf("")).toEqual(inOrder);
    expect(await read()).toEqual([8, 7, 6, 4, 2, 1, 16]);
    expect(await p.seqsOf(`date_from=${before}`)).toEqual(inOrder);
    // They hide nothing, so verify has nothing to report.
    expect(await p.verify()).toMatchObject({ ok: true, verified: 16, failure: null });
  });

  it("lists no event under a target type that a planted type set names, alone or with an address", async () => {
    const p = await seeded();
    const teams = await p.seqsOf("target_type=team");
    expect(teams).toEqual([15, 14, 13]);
    // A team set at the first place over the first batch (every row of its range), whose events name documents only.
    await p.db.prepare("INSERT INTO target_type_sets (project_id, at, type, first_seq, last_seq, seqs, members) VALUES (?, 0, 'team', 1, 8, NULL, 8)").bind(p.id).run();
    expect(await p.seqsOf("target_type=team")).toEqual(teams);
    expect(await p.seqsOf(`target_type=team&ip_address=${p.ip}`)).toEqual(teams);
    expect(await p.verify()).toMatchObject({ ok: true, verified: 15, failure: null });
  });

  it("names a lone live event whose project tag row is gone, which leaves its public receipt unknown", async () => {
    const p = await seeded();
    // One event a request, no occurred_at: found by id at its instant, by a receipt through the project's tag row.
    const [lone] = await ingestMany(p.key, [event("user.logout", 40)], { ip: p.ip });
    p.sent.push(lone);
    const receipt = async () => (await call("GET", `/v1/receipts/${lone.id}`)).status;
    expect(await receipt()).toBe(200);
    const tags = await p.db.prepare("SELECT tag, project_id FROM project_tags WHERE project_id = ?").bind(p.id).all<{ tag: number; project_id: string }>();
    expect(tags.results).toHaveLength(1);
    await p.db.prepare("DELETE FROM project_tags WHERE project_id = ?").bind(p.id).run();
    // A third party checking the receipt is told there is no such event, as if retention had purged it.
    expect(await receipt()).toBe(404);
    expect(await p.verify()).toMatchObject({ ok: false, verified: 15, failure: { event_id: lone.id, reason: "index_damaged" } });
    await p.db.prepare("INSERT INTO project_tags (tag, project_id) VALUES (?, ?)").bind(tags.results[0].tag, p.id).run();
    expect(await receipt()).toBe(200);
    expect(await p.verify()).toMatchObject({ ok: true, verified: 16, failure: null });
  });

  it("names an event whose row for a third target is gone or points elsewhere, which leaves it out of that target's list", async () => {
    const p = await seeded();
    const three = (i: number) => ({ ...event("doc.move", i), targets: [{ type: "document", id: `d_${i}` }, { type: "team", id: "t_1" }, { type: "folder", id: `f_${i}` }] });
    p.sent.push(...(await ingestMany(p.key, [three(50), three(51)], { ip: p.ip })));
    // The third target is a row of event_targets, not an index entry of the event's own.
    const byFolder = (i: number) => p.seqsOf(`target_type=folder&target_id=f_${i}`);
    expect(await byFolder(50)).toEqual([16]);
    expect(await p.seqsOf("target_type=folder")).toEqual([17, 16]);
    const row = await p.db.prepare("SELECT row_id FROM event_targets WHERE project_id = ? AND id = 'f_50'").bind(p.id).first<{ row_id: number }>();
    await p.db.prepare("DELETE FROM event_targets WHERE project_id = ? AND id = 'f_50'").bind(p.id).run();
    expect(await byFolder(50)).toEqual([]);
    expect(await p.seqsOf("target_type=folder")).toEqual([17]);
    expect(await p.verify()).toMatchObject({ ok: false, verified: 15, failure: { event_id: p.sent[15].id, reason: "index_damaged" } });
    // Put back pointing at another event's row: the list takes a row only for the event it names, so it shows nothing.
    const other = await p.db.prepare("SELECT row_id FROM events WHERE project_id = ? AND seq = 1").bind(p.id).first<{ row_id: number }>();
    await p.db.prepare("INSERT INTO event_targets (project_id, type, id, occurred_at, seq, row_id) VALUES (?1, 'folder', 'f_50', ?2, 16, ?3)").bind(p.id, p.sent[15].occurred_at, other!.row_id).run();
    expect(await byFolder(50)).toEqual([]);
    expect(await p.verify()).toMatchObject({ ok: false, verified: 15, failure: { event_id: p.sent[15].id, reason: "index_damaged" } });
    await p.db.prepare("UPDATE event_targets SET row_id = ?2 WHERE project_id = ?1 AND id = 'f_50'").bind(p.id, row!.row_id).run();
    expect(await byFolder(50)).toEqual([16]);
    expect(await p.verify()).toMatchObject({ ok: true, verified: 17, failure: null });
  });

  it("lists nothing more and hides nothing when rows of event_targets are planted at another time or for an event without that target", async () => {
    const p = await seeded();
    const three = (i: number) => ({ ...event("doc.move", i), targets: [{ type: "document", id: `d_${i}` }, { type: "team", id: "t_1" }, { type: "folder", id: `f_${i}` }] });
    p.sent.push(...(await ingestMany(p.key, [three(50), three(51)], { ip: p.ip })));
    const folders = () => listPages(p.key, "/v1/events", "target_type=folder", 2);
    expect(await folders()).toEqual([17, 16]);
    // Rows naming events 1 and 2 (no folder among their targets) as of 2099: the walk of event_targets reads them
    // first. It once took them by their own time, so a page of 2 showed 17 and 2, and its cursor passed over 16.
    const rowOf = async (seq: number) => (await p.db.prepare("SELECT row_id FROM events WHERE project_id = ? AND seq = ?").bind(p.id, seq).first<{ row_id: number }>())!.row_id;
    const plant = "INSERT INTO event_targets (project_id, type, id, occurred_at, seq, row_id) VALUES (?1, 'folder', ?2, ?3, ?4, ?5)";
    await p.db.batch([
      p.db.prepare(plant).bind(p.id, "f_x", "2099-01-01T00:00:00.000Z", 1, await rowOf(1)),
      p.db.prepare(plant).bind(p.id, "f_y", "2099-01-01T00:00:00.000Z", 2, await rowOf(2)),
    ]);
    expect(await folders()).toEqual([17, 16]);
    expect(await p.seqsOf("target_type=folder&target_id=f_x")).toEqual([]);
    // The same rows at the events' own time: an event is listed for a target only when it names it.
    await p.db.batch([
      p.db.prepare("DELETE FROM event_targets WHERE project_id = ? AND id IN ('f_x', 'f_y')").bind(p.id),
      p.db.prepare(plant).bind(p.id, "f_x", p.sent[0].occurred_at, 1, await rowOf(1)),
    ]);
    expect(await folders()).toEqual([17, 16]);
    expect(await p.seqsOf("target_type=folder&target_id=f_x")).toEqual([]);
    // With an actor, whose walk checks each of its rows for the target.
    expect(await p.seqsOf("actor_id=u_0&target_type=folder")).toEqual([]);
    expect(await p.seqsOf("actor_id=u_50&target_type=folder&target_id=f_50")).toEqual([16]);
    // One for event 16 with an id below its folder's: the walk takes an event's row of the smallest id once, and
    // that must be one of the event's own targets, or the event is listed by none.
    await p.db.prepare(plant).bind(p.id, "a", p.sent[15].occurred_at, 16, await rowOf(16)).run();
    expect(await folders()).toEqual([17, 16]);
    expect(await p.verify()).toMatchObject({ ok: true, verified: 17, failure: null });
  });

  it("names the last event of a closed search group whose entry is gone, which leaves the group out of search", async () => {
    const p = await createProject();
    // 300 events, so that a search finds the early ones through the index (it checks the newest 250 itself).
    const sent: Sent[] = await ingestMany(p.key, Array.from({ length: 300 }, (_, i) => ({ action: "doc.read", actor: { id: `u_${i}`, email: `u${i}x@ex.test` } })));
    const search = async (q: string) => (await call("GET", `/v1/events/search?q=${q}`, { key: p.key })).json.data.map((e: { seq: number }) => e.seq);
    const verify = async () => (await call("GET", "/v1/events/verify", { key: p.key })).json.data;
    expect(await search("u3x")).toEqual([4]);
    const key = await p.db.prepare("SELECT row_id - search_lead AS k FROM events WHERE project_id = ? AND seq = 4").bind(p.id).first<{ k: number }>();
    await p.db.prepare("DELETE FROM events_search WHERE rowid = ?").bind(key!.k).run();
    expect(await search("u3x")).toEqual([]);
    // The group is events 1-16 (a commit's first block); verify asks its last row, so that a row edited in D1 (whose
    // group entry a trigger drops) is still named for its hash.
    expect(await verify()).toMatchObject({ ok: false, verified: 15, failure: { event_id: sent[15].id, reason: "index_damaged" } });
    // What projects:reindex runs: the entries of the closed groups the index lacks, from the rows' stored words.
    await p.db.prepare(missingGroupsSql(p.id, 1, 300)).run();
    expect(await search("u3x")).toEqual([4]);
    expect(await verify()).toMatchObject({ ok: true, verified: 300, failure: null });
    // The newest group has no entry until it closes, and is not asked for one.
    const open = await p.db.prepare("SELECT count(*) AS n FROM events e WHERE project_id = ? AND NOT EXISTS (SELECT 1 FROM events_search f WHERE f.rowid = e.row_id - e.search_lead)").bind(p.id).first<{ n: number }>();
    expect(open!.n).toBeGreaterThan(0);
  });

  it("names an event marked as held by a set that does not hold it, which leaves it out of its index", async () => {
    const p = await seeded();
    // user.login at seq 3 has its action index entry; the mark takes it out of the index, and no set names it.
    const listed = await p.seqsOf("action=user.login");
    expect(listed).toEqual([5, 3]);
    await p.db.prepare("UPDATE events SET action_in_set = 1 WHERE project_id = ? AND seq = 3").bind(p.id).run();
    expect(await p.seqsOf("action=user.login")).toEqual([5]);
    expect(await p.verify()).toMatchObject({ ok: false, verified: 2, failure: { event_id: p.sent[2].id, reason: "index_damaged" } });
    // A window that holds the event reports it too; verify's window is on occurred_at, and every event here shares the batch's instants.
    const at = encodeURIComponent(p.sent[2].occurred_at);
    expect(await p.verify(`?from=${at}&to=${at}`)).toMatchObject({ ok: false, failure: { event_id: p.sent[2].id, reason: "index_damaged" } });
    await p.db.prepare("UPDATE events SET action_in_set = 0 WHERE project_id = ? AND seq = 3").bind(p.id).run();
    expect(await p.seqsOf("action=user.login")).toEqual(listed);
    expect(await p.verify()).toMatchObject({ ok: true, verified: 15 });
  });

  it("names the first event a deleted, altered or missing organization set hides from its organization's list, and lists every event once past a planted one", async () => {
    const p = await createProject();
    const ip = freshIp();
    // A tenant's batch (acme throughout: one set), then a batch naming globex three times (a set) and acme twice (entries).
    const sent: Sent[] = await ingestMany(p.key, Array.from({ length: 8 }, (_, i) => ({ ...event("doc.read", i), organization: "acme" })), { ip });
    const orgs = ["globex", "acme", "globex", "acme", "globex"];
    sent.push(...(await ingestMany(p.key, orgs.map((organization, i) => ({ ...event("doc.write", 10 + i), organization })), { ip })));
    const verify = async () => (await call("GET", "/v1/events/verify", { key: p.key })).json.data;
    const acme = () => listPages(p.key, "/v1/events", "organization=acme", 3);
    const hides = async (seq: number) => expect(await verify()).toMatchObject({ ok: false, verified: seq - 1, failure: { event_id: sent[seq - 1].id, reason: "index_damaged" } });
    const listed = [12, 10, 8, 7, 6, 5, 4, 3, 2, 1];
    expect(await acme()).toEqual(listed);
    expect(await verify()).toMatchObject({ ok: true, verified: 13, failure: null });
    const set = "SELECT * FROM organization_sets WHERE project_id = ?1 AND organization = 'acme'";
    const kept = (await p.db.prepare(set).bind(p.id).first<Record<string, unknown>>())!;
    const putBack = async () => {
      await p.db.prepare("DELETE FROM organization_sets WHERE project_id = ?1 AND organization = 'acme'").bind(p.id).run();
      await p.db
        .prepare("INSERT INTO organization_sets (project_id, organization, received_at, first_seq, last_seq, seqs) VALUES (?, ?, ?, ?, ?, ?)")
        .bind(kept.project_id, kept.organization, kept.received_at, kept.first_seq, kept.last_seq, kept.seqs)
        .run();
      expect(await acme()).toEqual(listed);
      expect(await verify()).toMatchObject({ ok: true, verified: 13, failure: null });
    };
    // The set without its third member (seq 3, offset 2).
    await p.db.prepare("UPDATE organization_sets SET seqs = '[0,1,3,4,5,6,7]' WHERE project_id = ?1 AND organization = 'acme'").bind(p.id).run();
    expect(await acme()).toEqual(listed.filter((s) => s !== 3));
    await hides(3);
    await putBack();
    // The set gone: the tenant's whole batch leaves its list.
    await p.db.prepare("DELETE FROM organization_sets WHERE project_id = ?1 AND organization = 'acme'").bind(p.id).run();
    expect(await acme()).toEqual([12, 10]);
    await hides(1);
    await putBack();
    // A second acme set over seqs 4, 6 and 7 at the batch's instant: the set walk takes each row once, so it hides nothing.
    await p.db.prepare("INSERT INTO organization_sets (project_id, organization, received_at, first_seq, last_seq, seqs) VALUES (?1, 'acme', ?2, 4, 7, '[0,2,3]')").bind(p.id, kept.received_at).run();
    expect(await acme()).toEqual(listed);
    expect(await verify()).toMatchObject({ ok: true, verified: 13, failure: null });
    await p.db.prepare("DELETE FROM organization_sets WHERE project_id = ?1 AND first_seq = 4").bind(p.id).run();
    // The same planted at another instant lists nothing twice, and hides nothing.
    await p.db.prepare("INSERT INTO organization_sets (project_id, organization, received_at, first_seq, last_seq, seqs) VALUES (?1, 'acme', '2026-01-01T00:00:00.000Z', 1, 8, '[0,1,2,3,4,5,6,7]')").bind(p.id).run();
    expect(await acme()).toEqual(listed);
    expect(await listPages(p.key, "/v1/events", "organization=acme&date_from=2026-01-01T00:00:00.000Z", 2)).toEqual(listed);
    expect(await verify()).toMatchObject({ ok: true, verified: 13, failure: null });
    // An acme row with its own entry (seq 10), marked as held by a set: out of the index, and no set names it.
    await p.db.prepare("UPDATE events SET org_in_set = 1 WHERE project_id = ? AND seq = 10").bind(p.id).run();
    expect(await acme()).toEqual(listed.filter((s) => s !== 10));
    await hides(10);
    await p.db.prepare("UPDATE events SET org_in_set = 0 WHERE project_id = ? AND seq = 10").bind(p.id).run();
    expect(await verify()).toMatchObject({ ok: true, verified: 13, failure: null });
  });

  it("names a backdated event marked as in a live span, which leaves it out of the time index", async () => {
    const p = await seeded();
    const listed = await p.seqsOf("");
    await p.db.prepare("UPDATE events SET time_in_span = 1 WHERE project_id = ? AND seq = 14").bind(p.id).run();
    expect(await p.seqsOf("")).toEqual(listed.filter((s) => s !== 14));
    expect(await p.verify()).toMatchObject({ ok: false, verified: 13, failure: { event_id: p.sent[13].id, reason: "index_damaged" } });
    await p.db.prepare("UPDATE events SET time_in_span = 0 WHERE project_id = ? AND seq = 14").bind(p.id).run();
    expect(await p.verify()).toMatchObject({ ok: true, verified: 15 });
  });
});
