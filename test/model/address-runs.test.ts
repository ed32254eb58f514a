import { describe, expect, it } from "vitest";
import { addressRuns, MAX_RUN, MIN_RUN, SPARSE_RUNS } from "../../src/model/address-runs";
import { call, createProject, ingestMany, listOrder, listPages } from "../helpers";

const A = "203.0.113.50";
const B = "198.51.100.7";
const at = (minute: number) => new Date(Date.UTC(2026, 4, 5, 5, minute)).toISOString();

type Sent = { seq: number; occurred_at: string; action: string; organization: string | null; ip_address: string | null };

/**
 * Batches of one address (runs: no index entry), lone events and a batch of
 * two (index entries), another address between them, backfilled times that
 * interleave across requests, and a live batch.
 */
async function seeded() {
  const p = await createProject();
  const sent: Sent[] = [];
  const event = (i: number, live = false) => ({
    action: ["doc.read", "doc.write", "user.login"][i % 3],
    organization: i % 2 ? "org_odd" : "org_even",
    actor: { id: `u_${i % 4}` },
    ...(live ? {} : { occurred_at: at((i * 17) % 60) }),
  });
  const batch = async (ip: string, from: number, n: number, live = false) =>
    sent.push(...(await ingestMany(p.key, Array.from({ length: n }, (_, k) => event(from + k, live)), { ip })));
  const lone = async (ip: string, i: number) => {
    const res = await call("POST", "/v1/events", { key: p.key, body: event(i), ip });
    expect(res.status).toBe(201);
    sent.push(res.json.data);
  };
  await batch(A, 0, 5);
  await lone(A, 5);
  await batch(B, 6, 4);
  await lone(A, 10);
  await batch(A, 11, 2);
  await batch(A, 13, 6);
  await batch(B, 19, 3);
  await batch(A, 22, 3, true);
  return { ...p, sent };
}

const expected = listOrder<Sent>;
const walk = listPages;

/**
 * Every read by address, page by page, against the events as sent. The page
 * size picks the walk too (sparseAddressSql): pages of 2 walk the time index
 * for A's 14 run events and B's 7 among 25 events (9 x 7 x 7 > 3 x 25), pages
 * of 200 read their runs (9 x 14 x 14 <= 201 x 25).
 */
async function everyReadByAddress(p: Awaited<ReturnType<typeof seeded>>, limit: number) {
  const byA = (e: Sent) => e.ip_address === A;
  expect(await walk(p.key, "/v1/events", `ip_address=${A}`, limit)).toEqual(expected(p.sent, byA));
  expect(await walk(p.key, "/v1/events", `ip_address=${B}`, limit)).toEqual(expected(p.sent, (e) => e.ip_address === B));
  expect(await walk(p.key, "/v1/events", `ip_address=${A}&action=doc.write`, limit)).toEqual(expected(p.sent, (e) => byA(e) && e.action === "doc.write"));
  expect(await walk(p.key, "/v1/events", `ip_address=${A}&actions=doc.read,user.login`, limit)).toEqual(expected(p.sent, (e) => byA(e) && e.action !== "doc.write"));
  expect(await walk(p.key, "/v1/events", `ip_address=${A}&actions_exclude=doc.read`, limit)).toEqual(expected(p.sent, (e) => byA(e) && e.action !== "doc.read"));
  expect(await walk(p.key, "/v1/events", `ip_address=${A}&organization=org_odd&date_from=${at(10)}&date_to=${at(50)}`, limit)).toEqual(
    expected(p.sent, (e) => byA(e) && e.organization === "org_odd" && e.occurred_at >= at(10) && e.occurred_at <= at(50)),
  );
  expect(await walk(p.key, "/v1/events/search", `q=doc&ip_address=${A}`, limit)).toEqual(expected(p.sent, (e) => byA(e) && e.action.startsWith("doc.")));
  const exported = await call("GET", `/v1/exports?format=json&ip_address=${A}`, { key: p.key });
  expect(exported.status).toBe(200);
  expect((JSON.parse(exported.text) as Sent[]).map((e) => e.seq).sort((a, b) => a - b)).toEqual(p.sent.filter(byA).map((e) => e.seq).sort((a, b) => a - b));
  expect(await walk(p.key, "/v1/events", "ip_address=192.0.2.1", limit)).toEqual([]);
}

describe("addressRuns", () => {
  it("makes a run of MIN_RUN or more consecutive rows of one project and address, cut at MAX_RUN rows", () => {
    const rows = (n: number, ip: string | null, from = 1, project = "p") => Array.from({ length: n }, (_, i) => ({ project_id: project, seq: from + i, ip_address: ip }));
    expect(addressRuns(rows(MIN_RUN - 1, A))).toEqual({ runs: [], ipRun: [0, 0] });
    expect(addressRuns(rows(MIN_RUN, null)).runs).toEqual([]);
    const long = addressRuns(rows(2 * MAX_RUN + 2, A));
    expect(long.runs).toEqual([
      { projectId: "p", ip: A, first: 1, last: MAX_RUN },
      { projectId: "p", ip: A, first: MAX_RUN + 1, last: 2 * MAX_RUN },
    ]);
    expect(long.ipRun.slice(-3)).toEqual([1, 0, 0]);
    // Another address, another project or a gap in seq ends a run.
    const mixed = addressRuns([...rows(3, A), ...rows(3, B, 4), ...rows(3, B, 7, "q"), ...rows(3, B, 11, "q")]);
    expect(mixed.runs.map((r) => [r.projectId, r.ip, r.first, r.last])).toEqual([["p", A, 1, 3], ["p", B, 4, 6], ["q", B, 7, 9], ["q", B, 11, 13]]);
  });
});

describe("address runs (migration 0038)", () => {
  it("a request's events are one run (a live request's, one set) and take no index entry; lone events and pairs keep theirs", async () => {
    const p = await seeded();
    const runs = await p.db.prepare("SELECT ip, first_seq, last_seq FROM ip_runs WHERE project_id = ? ORDER BY first_seq").bind(p.id).all();
    expect(runs.results).toEqual([
      { ip: A, first_seq: 1, last_seq: 5 },
      { ip: B, first_seq: 7, last_seq: 10 },
      { ip: A, first_seq: 14, last_seq: 19 },
      { ip: B, first_seq: 20, last_seq: 22 },
    ]);
    // The live batch's rows share its instant: a live set in list order (migration 0043), not a run.
    const sets = await p.db.prepare("SELECT ip_address, first_seq, last_seq, seqs FROM address_sets WHERE project_id = ?").bind(p.id).all();
    expect(sets.results).toEqual([{ ip_address: A, first_seq: 23, last_seq: 25, seqs: "[0,1,2]" }]);
    const marks = await p.db.prepare("SELECT ip_run, group_concat(seq) AS seqs FROM (SELECT ip_run, seq FROM events WHERE project_id = ? ORDER BY seq) GROUP BY ip_run").bind(p.id).all();
    expect(marks.results).toEqual([
      { ip_run: 0, seqs: "6,11,12,13" },
      { ip_run: 1, seqs: "1,2,3,4,5,7,8,9,10,14,15,16,17,18,19,20,21,22" },
      { ip_run: 2, seqs: "23,24,25" },
    ]);
  });

  it("every read by address finds its runs' events and its indexed ones, in list order, page by page", async () => {
    const p = await seeded();
    for (const limit of [2, 200]) await everyReadByAddress(p, limit);
  });

  it("reads the same when the address is common, walking the list index and checking each row", async () => {
    const p = await seeded();
    // Runs enough to count as common; they cover seqs the project does not have, so they add no event.
    const fake = Array.from({ length: SPARSE_RUNS }, (_, i) => [p.id, A, 1_000_000 + 2 * i, 1_000_000 + 2 * i]);
    await p.db
      .prepare("INSERT INTO ip_runs (project_id, ip, first_seq, last_seq) SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3 FROM json_each(?) j")
      .bind(JSON.stringify(fake))
      .run();
    for (const limit of [2, 200]) await everyReadByAddress(p, limit);
  });
});
