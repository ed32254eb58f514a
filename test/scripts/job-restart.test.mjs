// A job survives the runtime's restart: wrangler dev on a persisted state is
// stopped while an export job runs and started again on the same state; the
// job finishes with each of the project's events exactly once, a minute or so
// after the stop, with the default JOB_STALL_SECONDS (20 minutes). The local
// Workflows engine does not resume an instance interrupted mid-step (wrangler
// 4.155) and goes on calling it running; but a running step renews the job's
// record every 15 s, so the first GET /v1/jobs/:id once the record has not
// moved for a minute takes the instance for lost and restarts it, and it
// continues from the job's record (src/jobs/job-resume.ts). The same path
// resumes an instance lost in production.
// Run alone: node_modules/.bin/node --test test/scripts/job-restart.test.mjs
import assert from "node:assert/strict";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { projectShard, shardSql } from "../bench/archive-helpers.mjs";
import { batchLoad, createKey, startWitness, startWorker, tempDir } from "../bench/lib.mjs";

const EVENTS = 5000;
/** The restarted job must finish this soon after the stop: the minute a lost job waits, and the rest of its parts. */
const RESUMED_WITHIN_MS = 180_000;

/** startWitness's worker again on the same state (its secrets, migrations already applied), with wrangler.toml's JOB_STALL_SECONDS. */
function restartWitness(port, persistDir) {
  const secrets = JSON.parse(readFileSync(join(persistDir, "bench-secrets.json"), "utf8"));
  const vars = { ...secrets, RATE_LIMIT_INGEST_PER_MIN: "1000000000", RATE_LIMIT_OTHER_PER_MIN: "1000000000", METER: "enforce" };
  return startWorker({ port, persistDir, testScheduled: true, vars });
}

async function getJson(url, key, init = {}) {
  const res = await fetch(url, { ...init, headers: { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.30", "Content-Type": "application/json", ...init.headers } });
  return { status: res.status, json: await res.json() };
}

describe("jobs across a runtime restart", () => {
  const state = tempDir("jobs-restart");
  let worker = null;
  after(async () => {
    await worker?.stop();
    rmSync(state, { recursive: true, force: true });
  });

  it("an export job stopped mid-way by a restart finishes with every event once", { timeout: 300_000 }, async () => {
    const port = 18700 + Math.floor(Math.random() * 500);
    worker = await startWitness({ port, persistDir: state });
    const key = createKey(state, "restart-test");
    await batchLoad({ url: worker.url, key, total: EVENTS, batchSize: 100 });
    // Under wrangler dev 4.155 the runtime answers no other request while a job's steps run (the POST's
    // answer too comes only after them; production answers at once), so progress cannot be watched over
    // HTTP: the runtime is stopped on a timer, and the job's record read from the stopped state's D1.
    const posting = getJson(`${worker.url}/v1/jobs`, key, { method: "POST", body: JSON.stringify({ type: "export", format: "csv", part_rows: 10 }) }).catch((e) => e);
    await new Promise((r) => setTimeout(r, 1500));
    await worker.stop();
    await posting;
    const shard = projectShard(state, "restart-test");
    const [before] = shardSql(state, shard, "SELECT id, status, progress_done AS done, json_array_length(files) AS files FROM jobs WHERE project_id = 'restart-test'");
    assert.ok(before, "no job was recorded before the stop");
    const id = before.id;
    console.error("stopped at:", JSON.stringify(before));
    assert.equal(before.status, "running", `the job was not running when stopped: ${JSON.stringify(before)}`);
    assert.ok(before.done > 0 && before.done < EVENTS, `the job was not mid-way when stopped: ${JSON.stringify(before)}`);

    const stoppedAt = Date.now();
    worker = await restartWitness(port, state);
    console.error(`restarted in ${Date.now() - stoppedAt} ms`);
    let job = null;
    for (let i = 0; Date.now() - stoppedAt < RESUMED_WITHIN_MS; i++) {
      job = (await getJson(`${worker.url}/v1/jobs/${id}`, key)).json.data;
      if (i % 25 === 0) console.error("after restart:", job.status, JSON.stringify(job.progress));
      if (["succeeded", "failed", "canceled"].includes(job.status)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    console.error(`finished ${Date.now() - stoppedAt} ms after the stop:`, job.status, JSON.stringify(job.progress), `${job.files.length} files`);
    assert.equal(job.status, "succeeded", `after the restart: ${JSON.stringify({ status: job.status, progress: job.progress, error: job.error })} (it had ${before.done} rows before)`);
    let body = "";
    for (const f of job.files) {
      const res = await fetch(`${worker.url}${f.url}`, { headers: { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.30" } });
      assert.equal(res.status, 200);
      body += await res.text();
    }
    const whole = await (await fetch(`${worker.url}/v1/exports?format=csv`, { headers: { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.30" } })).text();
    assert.equal(body, whole);
    const ids = body.split("\r\n").slice(1).filter((l) => l !== "").map((l) => l.split(",")[0]);
    assert.equal(ids.length, EVENTS);
    assert.equal(new Set(ids).size, EVENTS);
    assert.deepEqual(job.progress, { done: EVENTS, total: EVENTS });
  });
});
