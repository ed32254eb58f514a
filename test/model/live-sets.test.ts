import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ACTION_SETS, ADDRESS_SETS, liveSets, ORGANIZATION_SETS } from "../../src/model/live-sets";
import { MAX_RUN, MIN_RUN } from "../../src/model/address-runs";
import { ledgerOf } from "../../src/chain/ledger";
import { call, createProject, createScopedKey, expectEveryListing, ingestMany, listOrder, listPages } from "../helpers";

type Sent = {
  id: string;
  seq: number;
  occurred_at: string;
  action: string;
  organization: string | null;
  ip_address: string | null;
  actor?: { id: string | null };
  targets: Array<{ type: string; id: string }>;
};

const later = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();

/** The i-th event of the organization and address tests: actions, actors and first targets in turn, an organization and an occurred_at of its own when given. */
const eventOf = (i: number, fields: { organization?: string | null; occurredAt?: string } = {}) => ({
  action: ["doc.read", "doc.write", "user.login"][i % 3],
  ...(fields.organization == null ? {} : { organization: fields.organization }),
  actor: { id: `u_${i % 4}` },
  targets: [{ type: i % 2 ? "team" : "document", id: `t_${i}` }],
  ...(fields.occurredAt ? { occurred_at: fields.occurredAt } : {}),
});

describe("liveSets", () => {
  const row = (seq: number, action: string, receivedAt = "2026-05-05T05:05:05.000Z", project = "p", organization: string | null = null, ip: string | null = null) => ({
    project_id: project,
    seq,
    action,
    organization,
    ip_address: ip,
    received_at: receivedAt,
  });
  const actionSets = (rows: ReturnType<typeof row>[], live: (0 | 1)[]) => liveSets(ACTION_SETS, rows, live);

  it("makes a set of MIN_RUN or more live rows of one project, instant and action, consecutive or not", () => {
    const rows = [row(1, "a"), row(2, "b"), row(3, "a"), row(4, "b"), row(5, "a"), row(6, "c")];
    expect(actionSets(rows, [1, 1, 1, 1, 1, 1])).toEqual({
      sets: [{ projectId: "p", value: "a", receivedAt: "2026-05-05T05:05:05.000Z", first: 1, offsets: [0, 2, 4] }],
      inSet: [1, 0, 1, 0, 1, 0],
    });
    expect(MIN_RUN).toBe(3);
    // Only live rows join: a row with an occurred_at of its own, or a copy's, keeps its entry and breaks nothing.
    expect(actionSets(rows, [1, 1, 0, 1, 1, 1])).toEqual({ sets: [], inSet: [0, 0, 0, 0, 0, 0] });
    expect(actionSets(rows, [0, 0, 0, 0, 0, 0]).sets).toEqual([]);
  });

  it("starts a new set at another project or instant, and before a set would span MAX_RUN seqs", () => {
    const later = "2026-05-05T05:05:06.000Z";
    const rows = [row(1, "a"), row(2, "a"), row(3, "a", later), row(4, "a", later), row(5, "a", later), row(6, "a", later, "q"), row(MAX_RUN, "a"), row(MAX_RUN + 1, "a")];
    expect(actionSets(rows, rows.map(() => 1)).sets).toEqual([
      { projectId: "p", value: "a", receivedAt: "2026-05-05T05:05:05.000Z", first: 1, offsets: [0, 1, MAX_RUN - 1] },
      { projectId: "p", value: "a", receivedAt: later, first: 3, offsets: [0, 1, 2] },
    ]);
    expect(actionSets(rows, rows.map(() => 1)).inSet).toEqual([1, 1, 1, 1, 1, 0, 1, 0]);
  });

  it("makes organization sets the same way, and a row without an organization joins none", () => {
    const at = "2026-05-05T05:05:05.000Z";
    const rows = [row(1, "a", at, "p", "acme"), row(2, "b", at, "p", null), row(3, "c", at, "p", "acme"), row(4, "d", at, "p", null), row(5, "e", at, "p", null), row(6, "f", at, "p", "acme")];
    expect(liveSets(ORGANIZATION_SETS, rows, rows.map(() => 1))).toEqual({
      sets: [{ projectId: "p", value: "acme", receivedAt: at, first: 1, offsets: [0, 2, 5] }],
      inSet: [1, 0, 1, 0, 0, 1],
    });
    // Each kind keys on its own column: these rows' actions all differ.
    expect(actionSets(rows, rows.map(() => 1)).sets).toEqual([]);
  });

  it("makes address sets the same way, marking their rows with ip_run's 2", () => {
    const at = "2026-05-05T05:05:05.000Z";
    const ips = ["10.0.0.1", null, "10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.2"];
    const rows = ips.map((ip, i) => row(i + 1, `a${i}`, at, "p", null, ip));
    expect(liveSets(ADDRESS_SETS, rows, rows.map(() => 1))).toEqual({
      sets: [{ projectId: "p", value: "10.0.0.1", receivedAt: at, first: 1, offsets: [0, 2, 4] }],
      inSet: [2, 0, 2, 0, 2, 0],
    });
    expect(liveSets(ADDRESS_SETS, rows, [1, 1, 1, 1, 0, 1]).sets).toEqual([]);
  });
});

describe("action sets (migration 0041)", () => {
  const ip = "198.51.100.9";
  const other = "203.0.113.9";
  const event = (action: string, i: number, occurredAt?: string) => ({
    action,
    organization: i % 2 ? "org_odd" : "org_even",
    actor: { id: `u_${i % 4}` },
    targets: [{ type: i % 3 === 0 ? "team" : "document", id: `t_${i}` }],
    ...(occurredAt ? { occurred_at: occurredAt } : {}),
  });
  const cycle = ["doc.read", "doc.write", "user.login"];

  /**
   * Live batches whose actions repeat (sets) and live batches that name an
   * action once or twice (entries), a batch mixing live and backdated rows,
   * backdated rows at exactly a live batch's instant, a lone live event, and
   * an action that only a set holds (admin.granted).
   */
  async function seeded() {
    const p = await createProject();
    const sent: Sent[] = [];
    const batch = async (events: unknown[], from = ip) => sent.push(...(await ingestMany(p.key, events, { ip: from })));
    await batch(Array.from({ length: 12 }, (_, i) => event(cycle[i % 3], i)));
    const first = sent[0].occurred_at;
    await batch([event("doc.read", 12), event("doc.read", 13, first), event("doc.read", 14), event("doc.read", 15, later(first, 1)), event("doc.read", 16), event("doc.read", 17)]);
    await batch([event("doc.read", 18), event("doc.write", 19), event("doc.read", 20), event("user.login", 21)]);
    const lone = await call("POST", "/v1/events", { key: p.key, body: event("doc.read", 22), ip });
    expect(lone.status).toBe(201);
    sent.push(lone.json.data);
    await batch(Array.from({ length: 7 }, (_, i) => event("user.login", 23 + i)), other);
    await batch([event("doc.write", 30, first), event("user.login", 31, later(first, 2)), event("doc.write", 32, "2026-01-01T00:00:00.000Z")]);
    await batch([event("admin.granted", 33), event("admin.granted", 34), event("admin.granted", 35)], other);
    return { ...p, sent, first };
  }

  it("gives a commit's live rows of a repeated action a set and no action index entry, and lists every read by action once, in list order", async () => {
    const p = await seeded();
    const sets = await p.db.prepare("SELECT action, first_seq, last_seq, seqs FROM action_sets WHERE project_id = ? ORDER BY first_seq, action").bind(p.id).all();
    expect(sets.results).toEqual([
      { action: "doc.read", first_seq: 1, last_seq: 10, seqs: "[0,3,6,9]" },
      { action: "doc.write", first_seq: 2, last_seq: 11, seqs: "[0,3,6,9]" },
      { action: "user.login", first_seq: 3, last_seq: 12, seqs: "[0,3,6,9]" },
      { action: "doc.read", first_seq: 13, last_seq: 18, seqs: "[0,2,4,5]" },
      { action: "user.login", first_seq: 24, last_seq: 30, seqs: "[0,1,2,3,4,5,6]" },
      { action: "admin.granted", first_seq: 34, last_seq: 36, seqs: "[0,1,2]" },
    ]);
    const inSet = await p.db.prepare("SELECT seq FROM events WHERE project_id = ? AND action_in_set = 1 ORDER BY seq").bind(p.id).all<{ seq: number }>();
    expect(inSet.results.map((r) => r.seq)).toEqual([...Array.from({ length: 12 }, (_, i) => i + 1), 13, 15, 17, 18, 24, 25, 26, 27, 28, 29, 30, 34, 35, 36]);

    const is = (...actions: string[]) => (e: Sent) => actions.includes(e.action);
    const mid = later(p.first, 1);
    const reads: Array<[string, (e: Sent) => boolean]> = [
      ["action=doc.read", is("doc.read")],
      ["action=user.login", is("user.login")],
      ["action=admin.granted", is("admin.granted")],
      ["action=nothing.here", () => false],
      ["actions=doc.read,user.login", is("doc.read", "user.login")],
      ["actions=admin.granted,doc.write,nothing.here", is("admin.granted", "doc.write")],
      [`action=doc.read&date_from=${p.first}&date_to=${mid}`, (e) => e.action === "doc.read" && e.occurred_at >= p.first && e.occurred_at <= mid],
      [`actions=doc.read,doc.write&date_to=${mid}`, (e) => is("doc.read", "doc.write")(e) && e.occurred_at <= mid],
      [`action=doc.read&ip_address=${ip}`, (e) => e.action === "doc.read" && e.ip_address === ip],
      [`actions=user.login,admin.granted&ip_address=${other}`, (e) => is("user.login", "admin.granted")(e) && e.ip_address === other],
      ["action=doc.write&organization=org_odd", (e) => e.action === "doc.write" && e.organization === "org_odd"],
      ["action=user.login&target_type=document", (e) => e.action === "user.login" && e.targets[0].type === "document"],
      // Narrowed to the project's other actions (event-read.ts): admin.granted is in no index entry, only its set.
      ["actions_exclude=doc.read,doc.write", is("user.login", "admin.granted")],
      [`actions_exclude=doc.read&ip_address=${other}`, (e) => e.action !== "doc.read" && e.ip_address === other],
    ];
    await expectEveryListing(p.key, p.sent, reads);
    expect(await listPages(p.key, "/v1/events/search", "q=doc&action=doc.read", 2)).toEqual(listOrder(p.sent, is("doc.read")));
    const exported = await call("GET", "/v1/exports?format=json&actions=user.login,admin.granted", { key: p.key });
    expect((JSON.parse(exported.text) as Sent[]).map((e) => e.seq)).toEqual(listOrder(p.sent, is("user.login", "admin.granted")));
  });

  it("lists an archived part of a commit once by action when it is restored while the commit's set is still there", async () => {
    const p = await createProject();
    const sent: Sent[] = await ingestMany(p.key, Array.from({ length: 20 }, (_, i) => event(cycle[i % 2], i)), { ip });
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    expect((await ledgerOf(env, p.id).archiveSegment(new Date().toISOString(), { segmentRows: 6 })).archived).toBe(6);
    await env.DB.prepare("UPDATE projects SET hot_days = NULL WHERE id = ?").bind(p.id).run();
    const sets = async () => (await p.db.prepare("SELECT action, first_seq FROM action_sets WHERE project_id = ? ORDER BY action").bind(p.id).all()).results;
    // Each set keeps its rows still hot, and still names the archived ones' seqs.
    expect(await sets()).toEqual([{ action: "doc.read", first_seq: 1 }, { action: "doc.write", first_seq: 2 }]);
    const { key: admin } = await createScopedKey(p.id, ["admin"]);
    expect((await call("POST", "/v1/project/restore-archive", { key: admin })).json.data).toMatchObject({ status: "done", restored: 6 });
    // A restore marks none of its rows: the action index holds them, and the walk of a set leaves them to it.
    const restored = await p.db.prepare("SELECT seq FROM events WHERE project_id = ? AND seq <= 20 AND action_in_set = 0 ORDER BY seq").bind(p.id).all();
    expect(restored.results.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const action of cycle.slice(0, 2)) {
      for (const limit of [2, 200]) {
        expect(await listPages(p.key, "/v1/events", `action=${action}`, limit), `${action} by ${limit}`).toEqual(listOrder(sent, (e) => e.action === action));
      }
    }
    expect(await listPages(p.key, "/v1/events", "actions=doc.read,doc.write", 3)).toEqual(listOrder(sent, () => true));
  });
});

describe("organization sets (migration 0042)", () => {
  const ip = "198.51.100.19";
  const other = "203.0.113.19";
  const event = (organization: string | null, i: number, occurredAt?: string) => eventOf(i, { organization, occurredAt });

  /**
   * A tenant's live batch (one organization throughout), a live batch of
   * three organizations (two repeated, one not) and events with none, a batch
   * naming each organization at most twice (entries), a batch mixing live
   * and backdated rows (one at exactly the first batch's instant), a lone
   * live event, and an organization that only a set holds (initech).
   */
  async function seeded() {
    const p = await createProject();
    const sent: Sent[] = [];
    const batch = async (events: unknown[], from = ip) => sent.push(...(await ingestMany(p.key, events, { ip: from })));
    await batch(Array.from({ length: 8 }, (_, i) => event("acme", i)));
    const first = sent[0].occurred_at;
    const mixed = ["acme", "globex", null, "acme", "globex", "acme", "umbrella", null, "globex", "acme"];
    await batch(mixed.map((o, i) => event(o, 10 + i)));
    await batch([event("acme", 20), event("globex", 21), event("acme", 22), event("umbrella", 23)]);
    await batch([event("acme", 30), event("acme", 31, first), event("acme", 32), event("globex", 33, later(first, 1)), event("acme", 34), event("acme", 35, "2026-01-01T00:00:00.000Z")]);
    const lone = await call("POST", "/v1/events", { key: p.key, body: event("acme", 40), ip });
    expect(lone.status).toBe(201);
    sent.push(lone.json.data);
    await batch([event("initech", 50), event("initech", 51), event("initech", 52)], other);
    return { ...p, sent, first };
  }

  it("gives a commit's live rows of a repeated organization a set and no organization index entry, and lists every read by organization once, in list order", async () => {
    const p = await seeded();
    const sets = await p.db.prepare("SELECT organization, first_seq, last_seq, seqs FROM organization_sets WHERE project_id = ? ORDER BY first_seq, organization").bind(p.id).all();
    expect(sets.results).toEqual([
      { organization: "acme", first_seq: 1, last_seq: 8, seqs: "[0,1,2,3,4,5,6,7]" },
      { organization: "acme", first_seq: 9, last_seq: 18, seqs: "[0,3,5,9]" },
      { organization: "globex", first_seq: 10, last_seq: 17, seqs: "[0,3,7]" },
      // The mixed batch's live acme rows (seqs 23, 25 and 27); 24 and 28 have their own occurred_at.
      { organization: "acme", first_seq: 23, last_seq: 27, seqs: "[0,2,4]" },
      { organization: "initech", first_seq: 30, last_seq: 32, seqs: "[0,1,2]" },
    ]);
    const entries = await p.db
      .prepare("SELECT seq FROM events INDEXED BY events_org_time_idx WHERE project_id = ? AND organization IS NOT NULL AND org_in_set = 0 ORDER BY seq")
      .bind(p.id)
      .all<{ seq: number }>();
    // Umbrella once in a batch, the third batch's rows, the backdated rows and the lone event keep their entries.
    expect(entries.results.map((r) => r.seq)).toEqual([15, 19, 20, 21, 22, 24, 26, 28, 29]);

    const of = (...orgs: Array<string | null>) => (e: Sent) => orgs.includes(e.organization);
    const mid = later(p.first, 1);
    const reads: Array<[string, (e: Sent) => boolean]> = [
      ["organization=acme", of("acme")],
      ["organization=globex", of("globex")],
      ["organization=initech", of("initech")],
      ["organization=umbrella", of("umbrella")],
      ["organization=nothing", () => false],
      ["", () => true],
      [`organization=acme&date_from=${p.first}&date_to=${mid}`, (e) => e.organization === "acme" && e.occurred_at >= p.first && e.occurred_at <= mid],
      ["organization=acme&action=doc.read", (e) => e.organization === "acme" && e.action === "doc.read"],
      ["organization=acme&actions=doc.read,user.login", (e) => e.organization === "acme" && e.action !== "doc.write"],
      ["organization=globex&actions_exclude=doc.read", (e) => e.organization === "globex" && e.action !== "doc.read"],
      [`organization=acme&ip_address=${ip}`, (e) => e.organization === "acme" && e.ip_address === ip],
      [`organization=initech&ip_address=${other}`, (e) => e.organization === "initech" && e.ip_address === other],
      ["organization=acme&target_type=team", (e) => e.organization === "acme" && e.targets[0].type === "team"],
      ["organization=acme&target_type=document&target_id=t_2", (e) => e.organization === "acme" && e.targets[0].id === "t_2"],
    ];
    await expectEveryListing(p.key, p.sent, reads);
    expect(await listPages(p.key, "/v1/events/search", "q=doc&organization=acme", 2)).toEqual(listOrder(p.sent, (e) => e.organization === "acme" && e.action !== "user.login"));
    const exported = await call("GET", "/v1/exports?format=json&organization=globex", { key: p.key });
    expect((JSON.parse(exported.text) as Sent[]).map((e) => e.seq)).toEqual(listOrder(p.sent, of("globex")));
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: p.sent.length, failure: null });
  });

  it("lists an archived and restored part of a tenant's commit once by organization", async () => {
    const p = await createProject();
    const sent: Sent[] = await ingestMany(p.key, Array.from({ length: 12 }, (_, i) => event(i < 9 ? "acme" : "globex", i)), { ip });
    const sets = async () => (await p.db.prepare("SELECT organization, first_seq FROM organization_sets WHERE project_id = ? ORDER BY organization").bind(p.id).all()).results;
    expect(await sets()).toEqual([{ organization: "acme", first_seq: 1 }, { organization: "globex", first_seq: 10 }]);
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    expect((await ledgerOf(env, p.id).archiveSegment(new Date().toISOString(), { segmentRows: 6 })).archived).toBe(6);
    // Each set keeps its rows still hot, and still names the archived ones' seqs.
    expect(await sets()).toEqual([{ organization: "acme", first_seq: 1 }, { organization: "globex", first_seq: 10 }]);
    await env.DB.prepare("UPDATE projects SET hot_days = NULL WHERE id = ?").bind(p.id).run();
    const { key: admin } = await createScopedKey(p.id, ["admin"]);
    expect((await call("POST", "/v1/project/restore-archive", { key: admin })).json.data).toMatchObject({ status: "done", restored: 6 });
    // A restore marks none of its rows: the organization index holds them, and the walk of a set leaves them to it.
    const restored = await p.db.prepare("SELECT seq FROM events WHERE project_id = ? AND seq <= 12 AND org_in_set = 0 ORDER BY seq").bind(p.id).all();
    expect(restored.results.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const organization of ["acme", "globex"]) {
      for (const limit of [2, 200]) {
        expect(await listPages(p.key, "/v1/events", `organization=${organization}`, limit), `${organization} by ${limit}`).toEqual(listOrder(sent, (e) => e.organization === organization));
      }
    }
  });

  it("drops a set with the last of its rows, and finds them by organization in the archive", async () => {
    const p = await createProject();
    const sent: Sent[] = await ingestMany(p.key, Array.from({ length: 12 }, (_, i) => event(i < 9 ? "acme" : "globex", i)), { ip });
    const sets = async () => (await p.db.prepare("SELECT count(*) AS n FROM organization_sets WHERE project_id = ?").bind(p.id).first<{ n: number }>())!.n;
    expect(await sets()).toBe(2);
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    expect((await ledgerOf(env, p.id).archiveSegment(new Date().toISOString(), { segmentRows: 8 })).archived).toBe(8);
    expect(await sets()).toBe(2);
    expect((await ledgerOf(env, p.id).archiveSegment(new Date().toISOString(), { segmentRows: 8 })).archived).toBe(4);
    expect(await sets()).toBe(0);
    for (const organization of ["acme", "globex"]) {
      expect(await listPages(p.key, "/v1/events", `organization=${organization}`, 4)).toEqual(listOrder(sent, (e) => e.organization === organization));
    }
  });
});

describe("address sets (migration 0043)", () => {
  const A = "198.51.100.29";
  const B = "203.0.113.29";
  const event = (i: number, occurredAt?: string) => eventOf(i, { organization: i % 2 ? "org_odd" : "org_even", occurredAt });

  /**
   * A live batch from A (a set), a batch from B mixing live rows (a set
   * over seqs apart) with backdated ones (one at exactly the first batch's
   * instant; apart, so no run: index entries), a backdated batch from A (a
   * run, migration 0038), a live pair from B (index entries: too few for a
   * set) and a lone live event from A (an index entry).
   */
  async function seeded() {
    const p = await createProject();
    const sent: Sent[] = [];
    const batch = async (events: unknown[], ip: string) => sent.push(...(await ingestMany(p.key, events, { ip })));
    await batch(Array.from({ length: 8 }, (_, i) => event(i)), A);
    const first = sent[0].occurred_at;
    await batch([event(10), event(11, first), event(12), event(13), event(14, later(first, 1)), event(15)], B);
    await batch([20, 21, 22, 23].map((i) => event(i, `2026-01-0${i - 19}T00:00:00.000Z`)), A);
    await batch([event(30), event(31)], B);
    const lone = await call("POST", "/v1/events", { key: p.key, body: event(40), ip: A });
    expect(lone.status).toBe(201);
    sent.push(lone.json.data);
    return { ...p, sent, first };
  }

  it("gives a commit's live rows of one address a set instead of a run, and lists every read by address once, in list order", async () => {
    const p = await seeded();
    const sets = await p.db.prepare("SELECT ip_address, first_seq, last_seq, seqs FROM address_sets WHERE project_id = ? ORDER BY first_seq").bind(p.id).all();
    expect(sets.results).toEqual([
      { ip_address: A, first_seq: 1, last_seq: 8, seqs: "[0,1,2,3,4,5,6,7]" },
      { ip_address: B, first_seq: 9, last_seq: 14, seqs: "[0,2,3,5]" },
    ]);
    const runs = await p.db.prepare("SELECT ip, first_seq, last_seq FROM ip_runs WHERE project_id = ?").bind(p.id).all();
    expect(runs.results).toEqual([{ ip: A, first_seq: 15, last_seq: 18 }]);
    const entries = await p.db
      .prepare("SELECT seq FROM events INDEXED BY events_ip_time_idx WHERE project_id = ? AND ip_address IS NOT NULL AND ip_run = 0 ORDER BY seq")
      .bind(p.id)
      .all<{ seq: number }>();
    expect(entries.results.map((r) => r.seq)).toEqual([10, 13, 19, 20, 21]);

    const at = (...ips: string[]) => (e: Sent) => ips.includes(e.ip_address!);
    const mid = later(p.first, 1);
    const reads: Array<[string, (e: Sent) => boolean]> = [
      [`ip_address=${A}`, at(A)],
      [`ip_address=${B}`, at(B)],
      ["ip_address=192.0.2.29", () => false],
      [`ip_address=${B}&date_from=${p.first}&date_to=${mid}`, (e) => e.ip_address === B && e.occurred_at >= p.first && e.occurred_at <= mid],
      [`ip_address=${A}&action=doc.read`, (e) => e.ip_address === A && e.action === "doc.read"],
      [`ip_address=${A}&actions=doc.read,user.login`, (e) => e.ip_address === A && e.action !== "doc.write"],
      [`ip_address=${B}&actions_exclude=doc.read`, (e) => e.ip_address === B && e.action !== "doc.read"],
      [`ip_address=${A}&organization=org_odd`, (e) => e.ip_address === A && e.organization === "org_odd"],
      [`ip_address=${A}&actor_id=u_1`, (e) => e.ip_address === A && e.actor?.id === "u_1"],
      [`ip_address=${B}&target_type=team`, (e) => e.ip_address === B && e.targets[0].type === "team"],
    ];
    await expectEveryListing(p.key, p.sent, reads);
    expect(await listPages(p.key, "/v1/events/search", `q=doc&ip_address=${A}`, 2)).toEqual(listOrder(p.sent, (e) => e.ip_address === A && e.action !== "user.login"));
    const exported = await call("GET", `/v1/exports?format=json&ip_address=${B}`, { key: p.key });
    expect((JSON.parse(exported.text) as Sent[]).map((e) => e.seq)).toEqual(listOrder(p.sent, at(B)));
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: p.sent.length, failure: null });
  });

  it("lists an archived and restored part of a commit once by address", async () => {
    const p = await createProject();
    const sent: Sent[] = await ingestMany(p.key, Array.from({ length: 12 }, (_, i) => event(i)), { ip: A });
    const sets = async () => (await p.db.prepare("SELECT first_seq FROM address_sets WHERE project_id = ?").bind(p.id).all()).results;
    expect(await sets()).toEqual([{ first_seq: 1 }]);
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    expect((await ledgerOf(env, p.id).archiveSegment(new Date().toISOString(), { segmentRows: 5 })).archived).toBe(5);
    // The set keeps its rows still hot, and still names the archived ones' seqs.
    expect(await sets()).toEqual([{ first_seq: 1 }]);
    await env.DB.prepare("UPDATE projects SET hot_days = NULL WHERE id = ?").bind(p.id).run();
    const { key: admin } = await createScopedKey(p.id, ["admin"]);
    expect((await call("POST", "/v1/project/restore-archive", { key: admin })).json.data).toMatchObject({ status: "done", restored: 5 });
    // A restore marks none of its rows live: they are a run again (consecutive, one address), and the set's walk leaves them to it.
    const marks = await p.db.prepare("SELECT ip_run, count(*) AS n FROM events WHERE project_id = ? AND seq <= 12 GROUP BY ip_run").bind(p.id).all();
    expect(marks.results).toEqual([{ ip_run: 1, n: 5 }, { ip_run: 2, n: 7 }]);
    for (const limit of [2, 200]) expect(await listPages(p.key, "/v1/events", `ip_address=${A}`, limit)).toEqual(listOrder(sent, () => true));
    // Twelve, and the restore's own record in the chain.
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 13, failure: null });
  });
});
