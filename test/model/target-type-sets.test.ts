import { describe, expect, it } from "vitest";
import { MAX_RUN, MIN_RUN, SPARSE_RUNS } from "../../src/model/address-runs";
import { targetTypeSets } from "../../src/model/target-type-sets";
import { call, createProject, ingestMany, listOrder, listPages } from "../helpers";

const at = (minute: number) => new Date(Date.UTC(2026, 4, 5, 5, minute)).toISOString();

type Target = { type: string; id: string };
type Sent = { seq: number; occurred_at: string; action: string; organization: string | null; targets: Target[] };

/**
 * Batches whose first targets share a type (sets: no index entry) mixed with
 * types a batch names once or twice (index entries), second targets in sets
 * of their own, lone events, backfilled times that interleave across requests,
 * and a live batch.
 */
async function seeded() {
  const p = await createProject();
  const sent: Sent[] = [];
  const firstType = (i: number) => (i % 7 === 3 ? "team" : i % 3 === 0 ? "user" : "document");
  const event = (i: number, live = false) => ({
    action: ["doc.read", "doc.write", "user.login"][i % 3],
    organization: i % 2 ? "org_odd" : "org_even",
    actor: { id: `u_${i % 4}` },
    targets: [{ type: firstType(i), id: `t_${i % 5}` }, ...(i % 4 === 1 ? [{ type: "user", id: `u_${i}` }] : i % 4 === 2 ? [{ type: "folder", id: "f" }] : [])],
    ...(live ? {} : { occurred_at: at((i * 17) % 60) }),
  });
  const batch = async (from: number, n: number, live = false) => sent.push(...(await ingestMany(p.key, Array.from({ length: n }, (_, k) => event(from + k, live)))));
  const lone = async (i: number) => {
    const res = await call("POST", "/v1/events", { key: p.key, body: event(i) });
    expect(res.status).toBe(201);
    sent.push(res.json.data);
  };
  await batch(0, 9);
  await lone(9);
  await batch(10, 2);
  await batch(12, 12);
  await lone(24);
  await batch(25, 8, true);
  return { ...p, sent };
}

const expected = listOrder<Sent>;
const walk = listPages;
const names = (type: string) => (e: Sent) => e.targets.some((t) => t.type === type);

/**
 * Every read by target type, page by page, against the events as sent. The
 * page size picks the walk (sparseTypeSql): pages of 2 walk the list index
 * and check each row (9 x S x S > 2 x 33 x 15 for the S rows the type's sets
 * name, 18 of document's), pages of 200 read the sets' rows.
 */
async function everyReadByType(p: Awaited<ReturnType<typeof seeded>>, limit: number) {
  for (const type of ["document", "user", "team", "folder"]) {
    expect(await walk(p.key, "/v1/events", `target_type=${type}`, limit), type).toEqual(expected(p.sent, names(type)));
  }
  const doc = names("document");
  expect(await walk(p.key, "/v1/events", "target_type=document&action=doc.write", limit)).toEqual(expected(p.sent, (e) => doc(e) && e.action === "doc.write"));
  expect(await walk(p.key, "/v1/events", "target_type=user&actions=doc.read,user.login", limit)).toEqual(
    expected(p.sent, (e) => names("user")(e) && e.action !== "doc.write"),
  );
  expect(await walk(p.key, "/v1/events", "target_type=document&actions_exclude=doc.read", limit)).toEqual(expected(p.sent, (e) => doc(e) && e.action !== "doc.read"));
  expect(await walk(p.key, "/v1/events", `target_type=document&organization=org_odd&date_from=${at(10)}&date_to=${at(50)}`, limit)).toEqual(
    expected(p.sent, (e) => doc(e) && e.organization === "org_odd" && e.occurred_at >= at(10) && e.occurred_at <= at(50)),
  );
  // With an id: the (type, id) index, which every event is in.
  expect(await walk(p.key, "/v1/events", "target_type=document&target_id=t_1", limit)).toEqual(
    expected(p.sent, (e) => e.targets[0].type === "document" && e.targets[0].id === "t_1"),
  );
  expect(await walk(p.key, "/v1/events/search", "q=doc&target_type=document", limit)).toEqual(expected(p.sent, (e) => doc(e) && e.action.startsWith("doc.")));
  const exported = await call("GET", "/v1/exports?format=json&target_type=user", { key: p.key });
  expect(exported.status).toBe(200);
  expect((JSON.parse(exported.text) as Sent[]).map((e) => e.seq).sort((a, b) => a - b)).toEqual(p.sent.filter(names("user")).map((e) => e.seq).sort((a, b) => a - b));
  expect(await walk(p.key, "/v1/events", "target_type=nothing", limit)).toEqual([]);
}

describe("targetTypeSets", () => {
  const row = (seq: number, targets: Target[], project = "p") => ({ project_id: project, seq, targets: JSON.stringify(targets) });
  const doc = { type: "document", id: "d" };
  const user = { type: "user", id: "u" };

  it("makes a set of MIN_RUN or more rows of one project whose target at a place has one type, consecutive or not", () => {
    expect(targetTypeSets([row(1, [doc]), row(2, [doc])])).toEqual({ sets: [], typeSets: [0, 0] });
    const mixed = targetTypeSets([row(1, [doc, user]), row(2, [user]), row(3, [doc, user]), row(4, []), row(5, [doc, user]), row(6, [user, doc])]);
    expect(mixed.sets).toEqual([
      { projectId: "p", at: 0, type: "document", first: 1, last: 5, offsets: [0, 2, 4] },
      { projectId: "p", at: 1, type: "user", first: 1, last: 5, offsets: [0, 2, 4] },
    ]);
    // Bit 1 for the first place, 2 for the second; user first twice (2, 6) and document second once (6) keep their entries.
    expect(mixed.typeSets).toEqual([3, 0, 3, 0, 3, 0]);
    expect(MIN_RUN).toBe(3);
  });

  it("starts a new set at another project, and before a set would span MAX_RUN seqs", () => {
    const rows = [row(1, [doc]), row(2, [doc]), row(3, [doc], "q"), row(4, [doc], "q"), row(5, [doc], "q"), row(MAX_RUN, [doc]), row(MAX_RUN + 1, [doc])];
    // Seqs 1 to MAX_RUN span MAX_RUN seqs, the most a set may (the trigger's seek): MAX_RUN + 1 starts another.
    expect(targetTypeSets(rows).sets).toEqual([
      { projectId: "p", at: 0, type: "document", first: 1, last: MAX_RUN, offsets: [0, 1, MAX_RUN - 1] },
      { projectId: "q", at: 0, type: "document", first: 3, last: 5, offsets: [0, 1, 2] },
    ]);
    expect(targetTypeSets(rows).typeSets).toEqual([1, 1, 1, 1, 1, 1, 0]);
  });
});

describe("target type sets (migration 0039)", () => {
  it("a batch's rows of one target type are one set and take no type index entry; a type a batch names once or twice keeps its entries", async () => {
    const p = await seeded();
    const sets = await p.db.prepare("SELECT at, type, first_seq, last_seq, members, seqs FROM target_type_sets WHERE project_id = ? ORDER BY first_seq, at, type").bind(p.id).all();
    expect(sets.results).toEqual([
      { at: 0, type: "document", first_seq: 2, last_seq: 9, members: 6, seqs: "[0,1,3,4,6,7]" },
      { at: 0, type: "user", first_seq: 13, last_seq: 22, members: 4, seqs: "[0,3,6,9]" },
      { at: 0, type: "document", first_seq: 14, last_seq: 24, members: 7, seqs: "[0,1,3,6,7,9,10]" },
      { at: 1, type: "user", first_seq: 14, last_seq: 22, members: 3, seqs: "[0,4,8]" },
      { at: 1, type: "folder", first_seq: 15, last_seq: 23, members: 3, seqs: "[0,4,8]" },
      { at: 0, type: "document", first_seq: 26, last_seq: 33, members: 5, seqs: "[0,1,3,4,7]" },
    ]);
    // Only the rows of a set's type are in it: the first batch's two users, every team, the lone events, the pair and
    // the second targets other batches name twice keep their entries.
    const inSets = async (bit: number) =>
      (await p.db.prepare("SELECT seq FROM events WHERE project_id = ? AND (type_sets & ?) <> 0 ORDER BY seq").bind(p.id, bit).all<{ seq: number }>()).results.map((r) => r.seq);
    expect(await inSets(1)).toEqual([2, 3, 5, 6, 8, 9, 13, 14, 15, 16, 17, 19, 20, 21, 22, 23, 24, 26, 27, 29, 30, 33]);
    expect(await inSets(2)).toEqual([14, 15, 18, 19, 22, 23]);
  });

  it("a batch of one type is a set without offsets, read by its range, with and without the other walk", async () => {
    const p = await createProject();
    const report = (i: number, type = "report") => ({ action: "report.run", targets: [{ type, id: `r_${i}` }], occurred_at: at((i * 13) % 60) });
    const sent: Sent[] = [
      ...(await ingestMany(p.key, [0, 1, 2, 3, 4].map((i) => report(i)))),
      ...(await ingestMany(p.key, [report(5, "user"), report(6), report(7, "user"), report(8), report(9), report(10, "user")])),
    ];
    const sets = await p.db.prepare("SELECT type, first_seq, last_seq, members, seqs FROM target_type_sets WHERE project_id = ? ORDER BY first_seq, type").bind(p.id).all();
    expect(sets.results).toEqual([
      { type: "report", first_seq: 1, last_seq: 5, members: 5, seqs: null },
      { type: "user", first_seq: 6, last_seq: 11, members: 3, seqs: "[0,2,5]" },
      { type: "report", first_seq: 7, last_seq: 10, members: 3, seqs: "[0,2,3]" },
    ]);
    const reports = listOrder(sent, names("report"));
    expect(reports).toHaveLength(8);
    // 8 rows named among 11: pages of 2 check each row along the time index (9 x 8 x 8 > 2 x 11 x 15), pages of 200 read the sets.
    for (const limit of [2, 200]) expect(await walk(p.key, "/v1/events", "target_type=report", limit)).toEqual(reports);
  });

  it("every read by target type finds its sets' events and its indexed ones, in list order, page by page", async () => {
    const p = await seeded();
    for (const limit of [2, 200]) await everyReadByType(p, limit);
  });

  it("reads the same when the type is common, walking the list index and checking each row", async () => {
    const p = await seeded();
    // Sets enough to count as common; they cover seqs the project does not have, so they add no event.
    for (const [place, type] of [[0, "document"], [0, "user"], [1, "user"], [1, "folder"]] as const) {
      const fake = Array.from({ length: SPARSE_RUNS }, (_, i) => [p.id, place, type, 1_000_000 + 2 * i, 1_000_000 + 2 * i]);
      await p.db
        .prepare(
          "INSERT INTO target_type_sets (project_id, at, type, first_seq, last_seq, members, seqs) " +
            "SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, 1, '[0]' FROM json_each(?) j",
        )
        .bind(JSON.stringify(fake))
        .run();
    }
    for (const limit of [2, 200]) await everyReadByType(p, limit);
  });
});
