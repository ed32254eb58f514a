import { describe, expect, it } from "vitest";
import { call, createProject, ingestMany } from "../helpers";

const T = (minute: number) => new Date(Date.UTC(2026, 4, 5, 5, minute)).toISOString();

/** A small, varied project: 12 events, one a minute, each filterable value spread around. */
async function seeded() {
  const p = await createProject();
  const events = Array.from({ length: 12 }, (_, i) => ({
    action: ["user.login", "user.logout", "doc.shared"][i % 3],
    organization: i % 2 === 0 ? "org_even" : "org_odd",
    actor: { id: `u_${i % 4}`, type: "user" },
    occurred_at: T(i),
  }));
  const stored = await ingestMany(p.key, events.slice(0, 6), { ip: "203.0.113.1" });
  stored.push(...(await ingestMany(p.key, events.slice(6), { ip: "203.0.113.2" })));
  return { ...p, stored };
}

const list = (key: string, query = "") => call("GET", `/v1/events${query}`, { key });
/** The minutes (0..11) of the events a list answered, in answer order. */
const minutes = (res: { json: any }) => res.json.data.map((e: any) => new Date(e.occurred_at).getUTCMinutes());

describe("GET /v1/events", () => {
  it("needs a key", async () => {
    const res = await list("");
    expect(res.status).toBe(401);
    expect(res.json.error.code).toBe("UNAUTHORIZED");
  });

  it("lists newest first in the event shape, with a null nextCursor on the last page", async () => {
    const p = await seeded();
    const res = await list(p.key);
    expect(res.status).toBe(200);
    expect(minutes(res)).toEqual([11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    expect(res.json.nextCursor).toBeNull();
    const newest = p.stored[11];
    expect(res.json.data[0]).toEqual(newest);
  });

  it("applies each filter alone", async () => {
    const p = await seeded();
    expect(minutes(await list(p.key, "?organization=org_odd"))).toEqual([11, 9, 7, 5, 3, 1]);
    expect(minutes(await list(p.key, "?actor_id=u_1"))).toEqual([9, 5, 1]);
    expect(minutes(await list(p.key, "?action=user.logout"))).toEqual([10, 7, 4, 1]);
    expect(minutes(await list(p.key, "?actions=user.logout,doc.shared"))).toEqual([11, 10, 8, 7, 5, 4, 2, 1]);
    expect(minutes(await list(p.key, "?actions_exclude=user.logout,doc.shared"))).toEqual([9, 6, 3, 0]);
    expect(minutes(await list(p.key, "?ip_address=203.0.113.2"))).toEqual([11, 10, 9, 8, 7, 6]);
    // Both bounds are inclusive.
    expect(minutes(await list(p.key, `?date_from=${T(9)}`))).toEqual([11, 10, 9]);
    expect(minutes(await list(p.key, `?date_to=${T(2)}`))).toEqual([2, 1, 0]);
    expect(minutes(await list(p.key, "?organization=nobody"))).toEqual([]);
  });

  it("combines filters, all of them applying", async () => {
    const p = await seeded();
    expect(minutes(await list(p.key, `?organization=org_even&date_from=${T(2)}&date_to=${T(8)}`))).toEqual([8, 6, 4, 2]);
    expect(minutes(await list(p.key, "?organization=org_odd&actions=user.login,user.logout"))).toEqual([9, 7, 3, 1]);
    expect(minutes(await list(p.key, "?actor_id=u_0&action=user.login&ip_address=203.0.113.1"))).toEqual([0]);
    expect(minutes(await list(p.key, "?actions=user.login,user.logout&actions_exclude=user.login"))).toEqual([10, 7, 4, 1]);
    expect(minutes(await list(p.key, "?action=user.login&actions_exclude=user.login"))).toEqual([]);
    expect(minutes(await list(p.key, "?action=user.login&actions=doc.shared"))).toEqual([]);
    expect(minutes(await list(p.key, `?ip_address=203.0.113.2&actions_exclude=doc.shared&date_to=${T(9)}`))).toEqual([9, 7, 6]);
  });

  it("excludes actions correctly whether the project has few or many distinct actions", async () => {
    for (const distinct of [8, 60]) {
      const p = await createProject();
      const events = Array.from({ length: 2 * distinct }, (_, i) => ({ action: `act.${i % distinct}`, occurred_at: T(i % 60) }));
      const stored = await ingestMany(p.key, events);
      const keep = new Set(["act.0", "act.3", `act.${distinct - 1}`]);
      const exclude = Array.from({ length: distinct }, (_, i) => `act.${i}`).filter((a) => !keep.has(a)).slice(0, 50);
      const expected = stored
        .filter((e) => !exclude.includes(e.action))
        .sort((a, b) => (a.occurred_at === b.occurred_at ? b.seq - a.seq : a.occurred_at < b.occurred_at ? 1 : -1))
        .map((e) => e.id);
      const res = await list(p.key, `?limit=200&actions_exclude=${exclude.join(",")}`);
      expect(res.json.data.map((e: any) => e.id), `${distinct} distinct actions`).toEqual(expected);
      const search = await call("GET", `/v1/events/search?q=act&limit=200&actions_exclude=${exclude.join(",")}`, { key: p.key });
      expect(search.json.data.map((e: any) => e.id)).toEqual(expected);
    }
  });

  it("pages through an exclusion, whether the excluded events are sparse or crowd whole pages", async () => {
    const p = await createProject();
    // Minutes 0-14 alternate two actions; minutes 15-39 are all "noise", the newest 25 events.
    const events = Array.from({ length: 40 }, (_, i) => ({ action: i >= 15 ? "noise" : i % 2 ? "keep.a" : "keep.b", occurred_at: T(i) }));
    await ingestMany(p.key, events);
    for (const [exclude, expected] of [
      ["keep.a", [39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 12, 10, 8, 6, 4, 2, 0]],
      ["noise", [14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]],
      ["noise,keep.b", [13, 11, 9, 7, 5, 3, 1]],
    ] as const) {
      const walked: number[] = [];
      let cursor = "";
      do {
        const page = await list(p.key, `?limit=4&actions_exclude=${exclude}${cursor ? `&cursor=${cursor}` : ""}`);
        expect(page.status).toBe(200);
        walked.push(...minutes(page));
        cursor = page.json.nextCursor ?? "";
      } while (cursor);
      expect(walked, `excluding ${exclude}`).toEqual(expected);
    }
  });

  it("treats an empty parameter as absent", async () => {
    const p = await seeded();
    expect(minutes(await list(p.key, "?organization=&cursor=&limit=&actions="))).toHaveLength(12);
  });

  it("pages with limit and cursor, each page resuming right after the last", async () => {
    const p = await seeded();
    const first = await list(p.key, "?limit=5&organization=org_even");
    expect(minutes(first)).toEqual([10, 8, 6, 4, 2]);
    expect(first.json.nextCursor).toBe(`${T(2)}~${p.stored[2].seq}`);
    const second = await list(p.key, `?limit=5&organization=org_even&cursor=${first.json.nextCursor}`);
    expect(minutes(second)).toEqual([0]);
    expect(second.json.nextCursor).toBeNull();
    // A page that ends exactly with the last event says so.
    const exact = await list(p.key, "?limit=6&organization=org_even");
    expect(exact.json.nextCursor).toBeNull();
  });

  it("walks hundreds of events sharing one occurred_at without losing or repeating one", async () => {
    const p = await createProject();
    const at = "2026-05-05T05:05:05.000Z";
    const events = Array.from({ length: 350 }, (_, i) => ({ action: `tie.${i % 2}`, occurred_at: i < 300 ? at : T(i - 300) }));
    const stored = await ingestMany(p.key, events);
    const expected = [...stored].sort((a, b) => (a.occurred_at === b.occurred_at ? b.seq - a.seq : a.occurred_at < b.occurred_at ? 1 : -1));

    for (const filter of ["", "&action=tie.0", "&actions=tie.0,tie.1"]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res = await list(p.key, `?limit=37${filter}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
        expect(res.status).toBe(200);
        seen.push(...res.json.data.map((e: any) => e.id));
        cursor = res.json.nextCursor;
        pages++;
      } while (cursor && pages < 50);
      const want = expected.filter((e) => !filter.includes("action=") || e.action === "tie.0").map((e) => e.id);
      expect(seen).toEqual(want);
    }
  });

  it("accepts a bare ISO timestamp as cursor, meaning older than that instant", async () => {
    const p = await seeded();
    expect(minutes(await list(p.key, `?cursor=${T(3)}`))).toEqual([2, 1, 0]);
    expect(minutes(await list(p.key, "?cursor=2026-05-05T07:05:30%2B02:00"))).toEqual([5, 4, 3, 2, 1, 0]);
    expect(minutes(await list(p.key, `?cursor=${T(3)}&date_to=${T(1)}`))).toEqual([1, 0]);
  });

  it("answers a malformed cursor with 400, never 500", async () => {
    const p = await seeded();
    const bad = ["abc", "2026-13-05T05:05:05.000Z", "2026-02-30T00:00:00.000Z", `${T(1)}~x`, `${T(1)}~`, "~12", `${T(1)}~1~2`,
      "2026-05-05T05:05:05Z~3", `${T(1)}~-1`, `${T(1)}~1e3`, `${T(1)}~99999999999999999999`, "x".repeat(5000), "%00", "' OR 1=1 --"];
    for (const cursor of bad) {
      const res = await list(p.key, `?cursor=${encodeURIComponent(cursor)}`);
      expect(res.status, cursor).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
    }
  });

  it("bounds limit to 1..200", async () => {
    const p = await seeded();
    expect((await list(p.key, "?limit=1")).json.data).toHaveLength(1);
    expect((await list(p.key, "?limit=200")).json.data).toHaveLength(12);
    for (const limit of ["0", "201", "-1", "1.5", "ten", "1e2", "99999999999999999999"]) {
      const res = await list(p.key, `?limit=${limit}`);
      expect(res.status, limit).toBe(400);
      expect(res.json.error.details.issues[0].path).toBe("limit");
    }
  });

  it("caps actions and actions_exclude at 50 entries each", async () => {
    const p = await seeded();
    const fifty = Array.from({ length: 50 }, (_, i) => `a.${i}`);
    expect((await list(p.key, `?actions=${fifty.join(",")}`)).json.data).toEqual([]);
    const withLogin = [...fifty.slice(0, 25), "user.login", ...fifty.slice(26)];
    expect(minutes(await list(p.key, `?actions=${withLogin.join(",")}`))).toEqual([9, 6, 3, 0]);
    expect(minutes(await list(p.key, `?actions_exclude=${withLogin.join(",")}`))).toEqual([11, 10, 8, 7, 5, 4, 2, 1]);
    expect((await list(p.key, `?actions_exclude=${fifty.join(",")}&actions=${fifty.join(",")}`)).status).toBe(200);
    for (const param of ["actions", "actions_exclude"]) {
      const res = await list(p.key, `?${param}=${[...fifty, "a.50"].join(",")}`);
      expect(res.status).toBe(400);
      expect(res.json.error.details.issues[0].path).toBe(param);
    }
    expect((await list(p.key, "?actions=,,")).status).toBe(400);
  });

  it("refuses bad dates, reversed ranges and repeated parameters", async () => {
    const p = await seeded();
    for (const query of ["?date_from=yesterday", "?date_to=2026-05-05", "?date_from=2026-05-05T05:05:05", `?date_from=${T(5)}&date_to=${T(4)}`,
      "?organization=a&organization=b", `?organization=${"o".repeat(129)}`]) {
      const res = await list(p.key, query);
      expect(res.status, query).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
    }
  });

  it("never shows another project's events", async () => {
    const a = await seeded();
    const b = await seeded();
    const res = await list(a.key, "?limit=200");
    expect(res.json.data).toHaveLength(12);
    expect(res.json.data.every((e: any) => e.project_id === a.id)).toBe(true);
    // A cursor from project B only positions the walk; it reveals nothing of B.
    const cursorOfB = `${T(11)}~${b.stored[11].seq}`;
    const paged = await list(a.key, `?cursor=${cursorOfB}`);
    expect(paged.json.data.map((e: any) => e.project_id)).not.toContain(b.id);
  });
});
