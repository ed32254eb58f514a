import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createProject, ingestMany } from "../helpers";
import { archiveAll } from "../storage/archive-helpers";
import { jobBytes, text, waitForJob } from "../jobs/job-helpers";

const at = (i: number) => new Date(Date.UTC(2026, 2, 1) + i * 60_000).toISOString();
const roles = ["viewer", "admin", "owner"];

// member.role.changed events carry role (i % 3) and seats (i); doc.read events carry a role too, undeclared for them.
const events = Array.from({ length: 24 }, (_, i) => ({
  action: i % 4 === 3 ? "doc.read" : "member.role.changed",
  metadata: { role: roles[i % 3], seats: i, sso: i % 2 === 0 },
  occurred_at: at(i),
}));
const SCHEMA = {
  metadata: {
    type: "object",
    properties: { role: { enum: roles }, seats: { type: "integer" }, sso: { type: "boolean" }, note: { type: "object" } },
  },
  filterable: ["role", "seats", "sso"],
};
// seq 1 is the chain's record of the schema: event i is seq i + 2.
const expected = (keep: (i: number) => boolean) => events.map((_, i) => i).filter(keep).map((i) => i + 2).reverse();
const seqsOf = (rows: Array<{ seq: number }>) => rows.map((r) => r.seq);

async function walk(key: string, query: string, limit = 4) {
  const seqs: number[] = [];
  let cursor: string | null = null;
  do {
    const page: any = await call("GET", `/v1/events?${query}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key });
    expect(page.status, page.text).toBe(200);
    seqs.push(...seqsOf(page.json.data));
    cursor = page.json.nextCursor;
  } while (cursor);
  return seqs;
}

async function project() {
  const p = await createProject();
  expect((await call("PUT", "/v1/schemas/member.role.changed", { key: p.key, body: SCHEMA })).status).toBe(201);
  await ingestMany(p.key, events);
  return p;
}

const member = (i: number) => i % 4 !== 3;

describe("filters on declared metadata fields", () => {
  it("list, search and export by a declared field, typed as its schema declares, for the actions that declare it", async () => {
    const p = await project();
    expect(await walk(p.key, "metadata.role=admin")).toEqual(expected((i) => member(i) && i % 3 === 1));
    expect(await walk(p.key, "metadata.seats=7")).toEqual(expected((i) => member(i) && i === 7));
    expect(await walk(p.key, "metadata.sso=true&metadata.role=owner")).toEqual(expected((i) => member(i) && i % 2 === 0 && i % 3 === 2));
    expect(await walk(p.key, `metadata.role=viewer&date_from=${at(6)}`)).toEqual(expected((i) => member(i) && i % 3 === 0 && i >= 6));
    // An action filter that names no declaring action matches nothing.
    expect(await walk(p.key, "metadata.role=admin&action=doc.read")).toEqual([]);
    const search = await call("GET", "/v1/events/search?q=member&metadata.role=admin", { key: p.key });
    expect(seqsOf(search.json.data)).toEqual(expected((i) => member(i) && i % 3 === 1));
    const exported = await call("GET", "/v1/exports?format=json&metadata.role=owner", { key: p.key });
    expect(seqsOf(JSON.parse(exported.text))).toEqual(expected((i) => member(i) && i % 3 === 2));
  });

  it("refuses undeclared keys and badly typed values, naming the field", async () => {
    const p = await project();
    const refused = async (query: string, path: string) => {
      const res = await call("GET", `/v1/events?${query}`, { key: p.key });
      expect(res.status, res.text).toBe(400);
      expect(res.json.error.details.issues[0].path).toBe(path);
    };
    await refused("metadata.colour=red", "metadata.colour");
    await refused("metadata.note=x", "metadata.note");
    await refused("metadata.seats=many", "metadata.seats");
    await refused("metadata.sso=yes", "metadata.sso");
    await refused("metadata.role=a&metadata.role=b", "metadata.role");
    expect((await call("GET", "/v1/exports?format=csv&metadata.colour=red", { key: p.key })).status).toBe(400);
  });

  it("reach archived history in list and export jobs", async () => {
    const p = await project();
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    await archiveAll(p.id, 8);
    expect(await walk(p.key, "metadata.role=admin", 3)).toEqual(expected((i) => member(i) && i % 3 === 1));
    const job = await call("POST", "/v1/jobs", { key: p.key, body: { type: "export", format: "json", "metadata.role": "owner" } });
    expect(job.status, job.text).toBe(202);
    const done = await waitForJob(p.key, job.json.data.id);
    expect(done.status).toBe("succeeded");
    expect(seqsOf(JSON.parse(text(await jobBytes(p.key, done)))).sort((a, b) => b - a)).toEqual(expected((i) => member(i) && i % 3 === 2));
    const bad = await call("POST", "/v1/jobs", { key: p.key, body: { type: "export", format: "json", "metadata.colour": "red" } });
    expect(bad.status).toBe(400);
  });
});
