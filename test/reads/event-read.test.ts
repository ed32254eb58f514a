import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Selection } from "../../src/model/event-query";
import { listEvents } from "../../src/reads/event-read";
import { projectRowKey } from "../../src/storage/shards";
import { createProject, ingestMany } from "../helpers";

const selection = (projectId: string, exclude: string[]): Selection => ({
  projectId, organization: null, actorId: null, ipAddress: null, dateFrom: null, dateTo: null, actions: null, exclude,
});

/** `db`, with the SQL of every statement it is asked to prepare kept in `seen`. */
function recording(db: D1Database, seen: string[]): D1Database {
  return { prepare: (sql: string) => (seen.push(sql), db.prepare(sql)) } as unknown as D1Database;
}

describe("listEvents with excluded actions", () => {
  it("answers from its window alone when the list ends inside it, and narrows to the other actions when the excluded crowd it", async () => {
    const p = await createProject();
    // Six events: a page of 50 looks at the next 102, so the window holds the whole list.
    const stored = await ingestMany(p.key, ["a", "b", "noise", "a", "noise", "b"].map((action) => ({ action })));
    const rowKey = await projectRowKey(env, p.id);
    const seen: string[] = [];
    const page = await listEvents(recording(p.db, seen), rowKey, selection(p.id, ["noise"]), null, 50);
    expect(page.rows.map((r) => r.seq)).toEqual(stored.filter((e) => e.action !== "noise").map((e) => e.seq).reverse());
    expect(page.nextCursor).toBeNull();
    // One statement: no look at the project's distinct actions, no second walk.
    expect(seen).toHaveLength(1);

    // A page of 1 looks at 4 events: the newest four are "noise" twice and two others, which fill it.
    seen.length = 0;
    const small = await listEvents(recording(p.db, seen), rowKey, selection(p.id, ["noise"]), null, 1);
    expect(small.rows.map((r) => r.seq)).toEqual([stored[5].seq]);
    expect(seen).toHaveLength(1);

    // Four more "noise" on top: the window of 4 holds no other action, and the list goes on below it.
    await ingestMany(p.key, ["noise", "noise", "noise", "noise"].map((action) => ({ action })));
    seen.length = 0;
    const crowded = await listEvents(recording(p.db, seen), rowKey, selection(p.id, ["noise"]), null, 1);
    expect(crowded.rows.map((r) => r.seq)).toEqual([stored[5].seq]);
    // The window, the project's distinct actions, then the walk of the others.
    expect(seen).toHaveLength(3);
  });
});
