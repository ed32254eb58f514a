import { describe, expect, it } from "vitest";
import { FIRST_WINDOW, RARE_HITS, SCAN_WINDOW } from "../../src/reads/event-read";
import { searchTag } from "../../src/model/search-index";
import { MAX_TERMS } from "../../src/model/search-query";
import { call, createProject, ingestMany } from "../helpers";

const T = (minute: number) => new Date(Date.UTC(2026, 4, 5, 5, minute)).toISOString();

async function seeded() {
  const p = await createProject();
  const stored = await ingestMany(p.key, [
    { action: "user.login.succeeded", organization: "org_a", actor: { id: "u_1", name: "Bob Stone", email: "bob@acme.test" }, occurred_at: T(1) },
    { action: "user.login.failed", organization: "org_b", actor: { id: "u_2", name: "Alice Doe", email: "alice@acme.test" }, occurred_at: T(2) },
    { action: "document.shared", organization: "org_a", actor: { id: "u_1", name: "Bob Stone", email: "bob@acme.test" }, occurred_at: T(3) },
    { action: "invoice.paid", organization: "org_a", actor: { id: "svc_billing", type: "service", name: "José Álvarez" }, occurred_at: T(4) },
    { action: "user.logout", actor: { id: "u_2", name: "Alice Doe" }, metadata: { note: "stone" }, targets: [{ type: "doc", id: "login" }], occurred_at: T(5) },
  ]);
  return { ...p, stored };
}

/** Two project ids with the same search tag: they share doclists, as any two projects on a shard may by chance. */
function collidingIds(): [string, string] {
  const salt = crypto.randomUUID().slice(0, 8);
  const seen = new Map<string, string>();
  for (let i = 0; ; i++) {
    const id = `p-${salt}-${i}`;
    const other = seen.get(searchTag(id));
    if (other) return [other, id];
    seen.set(searchTag(id), id);
  }
}

const search = (key: string, query: string) => call("GET", `/v1/events/search?${query}`, { key });
const actions = (res: { json: any }) => res.json.data.map((e: any) => e.action);

describe("GET /v1/events/search", () => {
  it("needs a key", async () => {
    expect((await call("GET", "/v1/events/search?q=login")).status).toBe(401);
  });

  it("matches every term as a case-insensitive prefix, newest first, in the list's event shape", async () => {
    const p = await seeded();
    const res = await search(p.key, "q=logi");
    expect(res.status).toBe(200);
    expect(actions(res)).toEqual(["user.login.failed", "user.login.succeeded"]);
    expect(res.json.data[1]).toEqual(p.stored[0]);
    expect(res.json.nextCursor).toBeNull();
    expect(actions(await search(p.key, "q=LOGIN%20FAIL"))).toEqual(["user.login.failed"]);
    expect(actions(await search(p.key, "q=bob%40acme.test"))).toEqual(["document.shared", "user.login.succeeded"]);
    expect(actions(await search(p.key, "q=alice"))).toEqual(["user.logout", "user.login.failed"]);
    expect(actions(await search(p.key, "q=svc_bill"))).toEqual(["invoice.paid"]);
    expect(actions(await search(p.key, "q=jose%20alv"))).toEqual(["invoice.paid"]);
  });

  it("searches only action and the actor's name, e-mail and id", async () => {
    const p = await seeded();
    // "stone" is Bob's surname and also the metadata of the logout; "org_b" and targets are not searchable.
    expect(actions(await search(p.key, "q=stone"))).toEqual(["document.shared", "user.login.succeeded"]);
    expect(actions(await search(p.key, "q=org_b"))).toEqual([]);
    expect(actions(await search(p.key, "q=logout%20login"))).toEqual([]);
  });

  it("never parses the text as FTS5 syntax", async () => {
    const p = await seeded();
    const hostile = ['"', '"bob', "bob)", "(bob", "*", "bob*", "AND", "bob AND", "NEAR(bob alice)", "-bob", "bob -alice", "actor_name:bob",
      "^bob", "{action actor_id}: login", "bob OR alice", "NOT bob", "🙂", "bob 🙂", "\\", "'; DROP TABLE events; --", "\u0000", "x".repeat(255)];
    for (const q of hostile) {
      const res = await search(p.key, `q=${encodeURIComponent(q)}`);
      expect(res.status, q).toBe(200);
      expect(Array.isArray(res.json.data)).toBe(true);
    }
    expect(actions(await search(p.key, `q=${encodeURIComponent("bob*")}`))).toEqual(["document.shared", "user.login.succeeded"]);
    expect(actions(await search(p.key, `q=${encodeURIComponent("-alice")}`))).toEqual(["user.logout", "user.login.failed"]);
    expect(actions(await search(p.key, `q=${encodeURIComponent("NEAR(bob stone)")}`))).toEqual([]);
    const nothing = await search(p.key, `q=${encodeURIComponent('"*()🙂')}`);
    expect(nothing.json).toEqual({ data: [], nextCursor: null });
  });

  it("requires q of 1 to 255 characters and validates the list parameters", async () => {
    const p = await seeded();
    for (const query of ["", "q=", `q=${"x".repeat(256)}`, "q=a&q=b", "q=bob&limit=0", "q=bob&limit=201", "q=bob&cursor=nope", "q=bob&date_from=never"]) {
      const res = await search(p.key, query);
      expect(res.status, query).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
    }
  });

  it("applies every list filter on top of the text", async () => {
    const p = await seeded();
    expect(actions(await search(p.key, "q=acme&organization=org_a"))).toEqual(["document.shared", "user.login.succeeded"]);
    expect(actions(await search(p.key, "q=user&actor_id=u_2"))).toEqual(["user.logout", "user.login.failed"]);
    expect(actions(await search(p.key, "q=user&action=user.logout"))).toEqual(["user.logout"]);
    expect(actions(await search(p.key, "q=acme&actions=document.shared,user.login.failed"))).toEqual(["document.shared", "user.login.failed"]);
    expect(actions(await search(p.key, "q=acme&actions_exclude=document.shared"))).toEqual(["user.login.failed", "user.login.succeeded"]);
    expect(actions(await search(p.key, `q=user&date_from=${T(2)}&date_to=${T(4)}`))).toEqual(["user.login.failed"]);
  });

  it("pages like the list through all three search phases (walk, wider walk, FTS5) without loss or repeats", async () => {
    // Another project on the shard with the same tag (a collision) makes the term too common in the
    // doclists p reads for FTS5 alone, so all phases run; its needles must still never show up.
    const [otherId, pId] = collidingIds();
    const other = await createProject(otherId, { shard: 0 });
    await ingestMany(other.key, Array.from({ length: RARE_HITS + 1 }, () => ({ action: "needle.elsewhere" })));
    const p = await createProject(pId, { shard: 0 });
    // Needles every 50th event among filler: more events than both walks, many sharing one instant.
    const total = FIRST_WINDOW + SCAN_WINDOW + 600;
    const events = Array.from({ length: total }, (_, i) => ({
      action: i % 50 === 0 ? "needle.found" : "hay.stacked",
      actor: { id: `a_${i}`, name: i === 1 ? "Quentin Rarename" : "Hay Maker" },
      occurred_at: i % 3 === 0 ? "2026-05-05T05:05:05.000Z" : new Date(Date.UTC(2026, 4, 5) + i * 1000).toISOString(),
    }));
    const stored = await ingestMany(p.key, events);
    const expected = stored
      .filter((e) => e.action === "needle.found")
      .sort((a, b) => (a.occurred_at === b.occurred_at ? b.seq - a.seq : a.occurred_at < b.occurred_at ? 1 : -1))
      .map((e) => e.id);
    for (const limit of [7, 200]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await search(p.key, `q=needle&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
        expect(res.status).toBe(200);
        seen.push(...res.json.data.map((e: any) => e.id));
        cursor = res.json.nextCursor;
      } while (cursor && seen.length <= expected.length);
      expect(seen).toEqual(expected);
    }
    // A rare term found only below the first walk comes straight from FTS5, with the filters still applied.
    const oldest = stored[1];
    expect((await search(p.key, "q=raren")).json.data.map((e: any) => e.id)).toEqual([oldest.id]);
    expect((await search(p.key, "q=raren&action=needle.found")).json.data).toEqual([]);
    // A bare timestamp cursor works too.
    const older = await search(p.key, "q=needle&cursor=2026-05-05T00:10:00.000Z&limit=200");
    expect(older.json.data.map((e: any) => e.id)).toEqual(
      stored.filter((e) => e.action === "needle.found" && e.occurred_at < "2026-05-05T00:10:00.000Z").reverse().map((e) => e.id),
    );
  }, 60_000);

  it("ignores terms shorter than two characters: only one-letter words find nothing, 200", async () => {
    const p = await seeded();
    for (const q of ["a", "b", "a b c d e f g h i j k l", "u_1", "é ü"]) {
      const res = await search(p.key, `q=${encodeURIComponent(q)}`);
      expect(res.status, q).toBe(200);
      expect(res.json, q).toEqual({ data: [], nextCursor: null });
    }
    expect(actions(await search(p.key, "q=b%20bob%20s"))).toEqual(["document.shared", "user.login.succeeded"]);
  });

  it(`refuses more than ${MAX_TERMS} different terms with a 400 naming q`, async () => {
    const p = await seeded();
    const nine = "aa bb cc dd ee ff gg hh ii";
    const res = await search(p.key, `q=${encodeURIComponent(nine)}`);
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe("VALIDATION_ERROR");
    expect(res.json.error.details.issues).toEqual([{ path: "q", message: expect.stringContaining(`${MAX_TERMS}`) }]);
    // Short words do not count, nor do words another term already implies.
    for (const q of ["aa bb cc dd ee ff gg hh", "aa bb cc dd ee ff gg hh i j k l m n o p", "aa bb cc dd ee ff gg hh hhh"]) {
      expect((await search(p.key, `q=${encodeURIComponent(q)}`)).status, q).toBe(200);
    }
  });

  it("on one shard, never finds another project's events with the same words, through every phase", async () => {
    const a = await createProject(undefined, { shard: 0 });
    const b = await createProject(undefined, { shard: 0 });
    // B is full of the words; A has them once, below its first window, so FTS5 must find it.
    const same = { action: "doc.shared", actor: { id: "u_same", name: "Same Person", email: "same@acme.test" } };
    await ingestMany(b.key, Array.from({ length: RARE_HITS + 1 }, () => same));
    const mine = (await ingestMany(a.key, [same, ...Array.from({ length: FIRST_WINDOW + 10 }, () => ({ action: "filler.row" }))]))[0];
    for (const q of ["same", "same person", "doc shared", "acme", "u_same"]) {
      const res = await search(a.key, `q=${encodeURIComponent(q)}&limit=200`);
      expect(res.json.data.map((e: any) => e.id), q).toEqual([mine.id]);
    }
    const fromB = await search(b.key, "q=same&limit=200");
    expect(fromB.json.data).toHaveLength(200);
    expect(fromB.json.data.every((e: any) => e.project_id === b.id)).toBe(true);
  }, 30_000);

  it("never finds another project's events", async () => {
    const a = await seeded();
    const b = await seeded();
    const res = await search(a.key, "q=bob&limit=200");
    expect(res.json.data).toHaveLength(2);
    expect(res.json.data.every((e: any) => e.project_id === a.id)).toBe(true);
    expect(res.json.data.map((e: any) => e.id)).not.toContain(b.stored[0].id);
  });
});
