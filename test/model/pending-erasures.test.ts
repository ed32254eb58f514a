import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { startErasureJob } from "../../src/jobs/erasure-job";
import { readBatch } from "../../src/streams/batch-read";
import { call, createProject, ingestMany } from "../helpers";
import { archiveAll } from "../storage/archive-helpers";
import { getBytes, text, waitForJob } from "../jobs/job-helpers";

/**
 * An erasure accepted whose job has not scrubbed anything yet (the ledger
 * accepted it; its Workflow instance is started only at the end of the test):
 * every way out of the service applies it at read time, hot and archived
 * alike: export jobs, log streams, embed feeds, public receipts.
 */
const grace = { id: "u_grace", type: "user", name: "Grace Hopper", email: "grace.hopper@example.com" };
const SECRETS = [grace.id, grace.name, grace.email];
const noSecrets = (body: string) => SECRETS.filter((s) => body.includes(s));

describe("reads while an erasure is pending", () => {
  it("scrub the covered events in export jobs, log streams, embed feeds and public receipts, hot and archived", async () => {
    const p = await createProject();
    const events = (n: number, org: string) => Array.from({ length: n }, (_, i) => ({ action: "note.added", organization: org, actor: i % 2 ? grace : { id: "u_kurt", name: "Kurt" }, metadata: { i } }));
    const old = await ingestMany(p.key, events(12, "org_a"), { ip: "203.0.113.42" });
    await archiveAll(p.id, 6);
    const hot = await ingestMany(p.key, [...events(6, "org_a"), ...events(4, "org_b")], { ip: "203.0.113.42" });
    // Accepted by the ledger, scoped to org_a; the job is not started yet, so storage still holds every value.
    const accepted = await ledgerOf(env, p.id).erase({ by: "id", value: grace.id, organization: "org_a" }, { type: "api_key", id: p.prefix }, { ip_address: null, user_agent: null });
    expect(accepted).toMatchObject({ status: "applying", erasure_id: 1 });
    if (accepted.status !== "applying") return;
    expect((await p.db.prepare("SELECT count(*) AS n FROM events WHERE actor_id = ?").bind(grace.id).first<{ n: number }>())!.n).toBe(5);

    // An export job, downloaded.
    const job = await call("POST", "/v1/jobs", { key: p.key, body: { type: "export", format: "json", part_rows: 10 } });
    const done = await waitForJob(p.key, job.json.data.id);
    const files = await Promise.all(done.files.map((f: { url: string }) => getBytes(p.key, f.url)));
    const exported = JSON.parse(files.map((f) => text(f.bytes)).join("")) as any[];
    expect(exported.length).toBe(22);
    expect(noSecrets(JSON.stringify(exported.filter((e) => e.organization === "org_a")))).toEqual([]);
    // Grace's events (odd i) lost her address and browser too; Kurt's kept theirs.
    const orgA = exported.filter((e) => e.organization === "org_a");
    expect(orgA.map((e) => [e.metadata.i % 2, e.ip_address, e.anonymized_at === null])).toEqual(orgA.map((e) => (e.metadata.i % 2 ? [1, null, false] : [0, "203.0.113.42", true])));
    // Outside the erasure's organization, the actor stays as recorded.
    expect(exported.filter((e) => e.organization === "org_b" && e.actor.id === grace.id).length).toBe(2);

    // A log stream's next batches, from the archive and then the hot rows.
    const config = { dest: { streamId: "s", projectId: p.id, type: "webhook" as const, url: "https://x.test", credential: "", host: "x.test" }, filter: { organization: "org_a" }, format: "json" as const, loadedAt: Date.now() };
    let streamed = "";
    for (let cursor = 0, i = 0; i < 10; i++) {
      const batch = await readBatch(env, config, cursor, undefined);
      if (!batch) break;
      streamed += batch.events.map((e) => e.json).join("\n");
      cursor = batch.to;
    }
    expect(streamed.split("\n").length).toBe(18);
    expect(noSecrets(streamed)).toEqual([]);

    // An embed feed narrowed to org_a, and public receipts of a hot and an archived event.
    const token = (await call("POST", "/v1/embed/token", { key: p.key, body: { organization: "org_a" } })).json.data.token;
    const feed = await call("GET", "/v1/events?limit=100", { key: token });
    // The feed spans the archive too: org_a's 12 archived events and its 6 hot ones.
    expect(feed.json.data.length).toBe(18);
    expect(noSecrets(feed.text)).toEqual([]);
    for (const e of [old[1], hot[1]]) {
      const receipt = await call("GET", `/v1/receipts/${e.id}`);
      expect(receipt.json.data).toMatchObject({ event_id: e.id, actor: { type: "user", id: null }, valid: true });
    }

    // Then the job runs: the same answers, now from scrubbed storage.
    await startErasureJob(env, p.id, accepted.job_id);
    expect(await waitForJob(p.key, accepted.job_id)).toMatchObject({ status: "succeeded", result: { anonymized: 9 } });
    expect((await call("GET", `/v1/receipts/${old[1].id}`)).json.data).toMatchObject({ actor: { type: "user", id: null }, valid: true });
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, anonymized: 9 });
  });
});
