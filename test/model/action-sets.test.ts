import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { actionSets } from "../../src/model/action-sets";
import { MAX_RUN, MIN_RUN } from "../../src/model/address-runs";
import { ledgerOf } from "../../src/chain/ledger";
import { call, createProject, createScopedKey, ingestMany, listOrder, listPages } from "../helpers";

type Sent = { id: string; seq: number; occurred_at: string; action: string; organization: string | null; ip_address: string | null; targets: Array<{ type: string }> };

describe("actionSets", () => {
  const row = (seq: number, action: string, receivedAt = "2026-05-05T05:05:05.000Z", project = "p") => ({ project_id: project, seq, action, received_at: receivedAt });

  it("makes a set of MIN_RUN or more live rows of one project, instant and action, consecutive or not", () => {
    const rows = [row(1, "a"), row(2, "b"), row(3, "a"), row(4, "b"), row(5, "a"), row(6, "c")];
    expect(actionSets(rows, [1, 1, 1, 1, 1, 1])).toEqual({
      sets: [{ projectId: "p", action: "a", receivedAt: "2026-05-05T05:05:05.000Z", first: 1, offsets: [0, 2, 4] }],
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
      { projectId: "p", action: "a", receivedAt: "2026-05-05T05:05:05.000Z", first: 1, offsets: [0, 1, MAX_RUN - 1] },
      { projectId: "p", action: "a", receivedAt: later, first: 3, offsets: [0, 1, 2] },
    ]);
    expect(actionSets(rows, rows.map(() => 1)).inSet).toEqual([1, 1, 1, 1, 1, 0, 1, 0]);
  });
});

describe("action sets (migration 0041)", () => {
  const ip = "198.51.100.9";
  const other = "203.0.113.9";
  const later = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();
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
    for (const [query, keep] of reads) {
      for (const limit of [1, 2, 3, 200]) {
        expect(await listPages(p.key, "/v1/events", query, limit), `${query} by ${limit}`).toEqual(listOrder(p.sent, keep));
      }
    }
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
