import { describe, expect, it } from "vitest";
import { call, createProject, ingestMany, parseCsv } from "../helpers";
import { jobBytes, text, waitForJob } from "../jobs/job-helpers";
import { check } from "../model/ocsf/checker";

const events = [
  { action: "user.login.failed", actor: { id: "u_1", type: "user", name: "Ada", email: "ada@example.com" } },
  { action: "document.shared", actor: { id: "u_2", type: "user" }, targets: [{ type: "document", id: "d_1", name: "Plan" }], metadata: { via: "link" } },
  { action: "member.role.changed", actor: { id: "u_1", type: "user" }, targets: [{ type: "user", id: "u_9" }], changes: [{ field: "role", before: "viewer", after: "admin" }] },
];

describe("format=ocsf", () => {
  it("feed, export and export job write valid OCSF 1.3.0 events, in the class each action's catalog schema names", async () => {
    const p = await createProject();
    const put = (action: string, body: unknown) => call("PUT", `/v1/schemas/${action}`, { key: p.key, body });
    expect((await put("user.login.failed", { ocsf: { class_uid: 3002 } })).status).toBe(201);
    expect((await put("document.shared", { display: "{actor.id} shared {targets.document.name}" })).status).toBe(201);
    expect((await put("member.role.changed", { ocsf: { class_uid: 3001 } })).status).toBe(201);
    await ingestMany(p.key, events);

    const feed = await call("GET", "/v1/events/feed?format=ocsf&actions=user.login.failed,document.shared,member.role.changed", { key: p.key });
    expect(feed.status).toBe(200);
    const ocsf = feed.json.data as Array<Record<string, any>>;
    expect(ocsf.map((e) => e.class_uid)).toEqual([3002, 6003, 3001]);
    for (const e of ocsf) expect(check(e), JSON.stringify(e)).toEqual([]);
    expect(ocsf[0]).toMatchObject({ status_id: 2, activity_id: 1 });
    expect(ocsf[1]).toMatchObject({ message: "u_2 shared Plan", api: { operation: "document.shared" } });

    const exported = await call("GET", "/v1/exports?format=ocsf&actions=user.login.failed,document.shared,member.role.changed", { key: p.key });
    expect(exported.status).toBe(200);
    expect(exported.headers.get("Content-Disposition")).toMatch(/\.ocsf\.json"$/);
    const rows = JSON.parse(exported.text) as Array<Record<string, any>>;
    expect(rows.map((e) => e.class_uid).sort()).toEqual([3001, 3002, 6003]);
    for (const e of rows) expect(check(e)).toEqual([]);

    const job = await call("POST", "/v1/jobs", { key: p.key, body: { type: "export", format: "ocsf", action: "member.role.changed" } });
    expect(job.status, job.text).toBe(202);
    const done = await waitForJob(p.key, job.json.data.id);
    expect(done.status).toBe("succeeded");
    const [only] = JSON.parse(text(await jobBytes(p.key, done)));
    expect(only.class_uid).toBe(3001);
    expect(check(only)).toEqual([]);
    // The other formats are as they were.
    expect(parseCsv((await call("GET", "/v1/exports?format=csv", { key: p.key })).text)[0][0]).toBe("id");
    expect((await call("GET", "/v1/events/feed?format=xml", { key: p.key })).status).toBe(400);
    expect((await call("POST", "/v1/jobs", { key: p.key, body: { type: "export", format: "ocsf", evidence: true } })).status).toBe(400);
  });
});
