// npm run bench: every benchmark in one run, against wrangler dev on this machine.
// BENCH_EVENTS (default 1,000,000) sizes the large project the read and verify benches use;
// BENCH_JOB_EVENTS (default 10,000,000) the jobs bench's (jobs.bench.mjs). BENCH_PORT (default
// 8870) moves the service's port; the baseline and the floors take the next ones.
// BENCH_DATA names a directory for the service's local state that later runs reuse: the large
// project is loaded once, and a run that finds it complete goes straight to the reads.
// The service runs with METER=enforce: each bench ends with the worst invocation of each
// operation it made (D1 queries, subrequests) against Cloudflare's per-invocation limits.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { projectShard, runCron, shardSql, storedEvents } from "./archive-helpers.mjs";
import { dropPeriodSql, periodDdl, PERIOD_SCHEMA_SQL } from "../../src/model/periods.ts";
import { batchLoad, benchAddress, createKey, ensureWrk, fmt, liveEvent, meterRows, readsPeriodSeconds, report, reportMeter, resetMeter, startBaseline, startWitness, tempDir, waitIdle } from "./lib.mjs";

const total = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const only = process.argv.slice(2);
// The jobs bench loads millions of events (hours at 10M): it, and the benches that reuse its project, run only when named.
const named = ["jobs", "load", "history", "parallel"];
const want = (name) => (named.includes(name) ? only.includes(name) : only.length === 0 || only.includes(name));

ensureWrk();
const persistDir = process.env.BENCH_DATA ?? tempDir("witness");
mkdirSync(persistDir, { recursive: true });
// Data loaded before BENCH_DATA kept the signing keys beside it was signed with keys now lost.
const keptKeys = existsSync(join(persistDir, "bench-secrets.json"));
// Baseline first: a wrangler dev that starts later reloads the ones already
// running (dev registry), which would cut off requests in flight.
const port = Number(process.env.BENCH_PORT ?? 8870);
const baseline = await startBaseline({ port: port + 1 });
// The jobs bench varies the chunked verify's parallelism through a bench-only route (jobs-entry.ts).
const service = await startWitness({ port, persistDir, script: want("jobs") ? "test/bench/jobs-entry.ts" : null });
await new Promise((r) => setTimeout(r, 3000));

try {
  const ctx = {
    url: service.url,
    runtimeUrl: await service.runtimeUrl(),
    baselineUrl: baseline.url,
    baselineRuntimeUrl: await baseline.runtimeUrl(),
    processes: service.processes,
    inspectorPort: service.inspectorPort,
    persistDir,
    report,
  };
  /** A bench between a reset of the service's meter and its report. */
  const metered = async (title, work) => {
    await resetMeter(service.url);
    await work();
    await reportMeter(service.url, title);
  };
  // What D1 bills for each shape of write (issue 38), in the baseline's own database: a second.
  if (want("billing")) await (await import("./billing.bench.mjs")).default(ctx);
  // What a commit costs written to the ledger's own SQLite first (issue 38, item 3), in the baseline: seconds.
  if (want("journal")) await (await import("./journal.bench.mjs")).default(ctx);
  // Benches that make their own projects.
  // burst (issue 38): 20,000 events/s at one project for 30 s, past what it can take: 201 or 429, nothing lost.
  for (const m of ["ingest", "streams", "alerts", "burst"]) if (want(m)) await metered(m, async () => (await import(`./${m}.bench.mjs`)).default(ctx));

  const modules = ["reads", "verify", "log", "console", "catalog", "feed"].filter(want);
  if (modules.length > 0) {
    const projectId = "bench-large";
    // One key for the directory's life, kept beside its data: the daily cron (the archive bench and the spread
    // layout's reads run it) records each new key in the chain as witness.key.created, so a key a run would add
    // an event a run to the project's newest, and with periods to the main tables, marking them (model/periods.ts).
    const spread = process.env.BENCH_READS_PERIODS === "1";
    const keyFile = join(persistDir, `${projectId}-key.txt`);
    if (!existsSync(keyFile)) {
      // Spread over periods, the periods come first, so the key's event lands in one as a new project's first event
      // does in a deployment with periods on: the main tables stay unmarked, as the project's reads then find them.
      if (spread) await periodsAhead(service.url);
      writeFileSync(keyFile, createKey(persistDir, projectId));
    }
    const key = readFileSync(keyFile, "utf8").trim();
    // New projects go to the least-full shard: count on the one the directory names. The bench's
    // own events only: a kept BENCH_DATA from before the key file has a witness.key.created for each earlier run.
    const { bench: loaded } = storedEvents(persistDir, projectShard(persistDir, projectId), projectId);
    // BENCH_READS_LIVE=1 loads the project as the client package sends events: no occurred_at, so they
    // happen when received and are stored through commit spans, address runs and sets (storage v2)
    // instead of an index entry each. The directory remembers which, and the load's time window.
    const layoutFile = join(persistDir, `${projectId}-layout.json`);
    const live = process.env.BENCH_READS_LIVE === "1";
    let layout = existsSync(layoutFile) ? JSON.parse(readFileSync(layoutFile, "utf8")) : { layout: "scattered" };
    if (loaded > 0 && layout.layout !== (live ? "live" : "scattered")) {
      throw new Error(`${persistDir} holds ${projectId} in the ${layout.layout} layout: use another BENCH_DATA or ${layout.layout === "live" ? "" : "no "}BENCH_READS_LIVE=1`);
    }
    if (spread && !live) throw new Error("BENCH_READS_PERIODS=1 loads live: add BENCH_READS_LIVE=1");
    if (loaded > 0 && (layout.periods === true) !== spread) {
      throw new Error(`${persistDir} holds ${projectId} ${layout.periods ? "in periods" : "in the main tables"}: use another BENCH_DATA or ${layout.periods ? "" : "no "}BENCH_READS_PERIODS=1`);
    }
    // BENCH_READS_CURRENT=1: a spread layout of fewer events than asked, loaded in two-minute periods, gets the rest
    // loaded into the current period of the length now set (BENCH_READS_PERIOD_SECONDS=604800: the deployed week),
    // growing and past its first day, as a week's current period holds a project's newest events; the two-minute
    // periods' numbers, read as weeks, lie far ahead: settled, below it in list order (model/periods.ts, armSpans).
    const current = process.env.BENCH_READS_CURRENT === "1" && spread && loaded > 0 && loaded < total && layout.current === undefined;
    // Readers name a period by its length: one loaded with another length reads as other periods.
    const loadedSeconds = String(layout.periodSeconds ?? 120);
    if (loaded > 0 && spread && !current && loadedSeconds !== readsPeriodSeconds()) {
      throw new Error(`${persistDir} holds ${projectId} in periods of ${loadedSeconds} s: set BENCH_READS_PERIOD_SECONDS=${loadedSeconds}`);
    }
    const liveOnly = modules.filter((m) => !["reads", "verify"].includes(m));
    if (live && liveOnly.length > 0) throw new Error(`BENCH_READS_LIVE=1 runs only reads and verify, not ${liveOnly.join(", ")}`);
    if (loaded === total) {
      if (!keptKeys && want("verify")) throw new Error(`${persistDir} kept no signing keys, so its events cannot verify: use another BENCH_DATA`);
      console.log(`\nReusing the ${total.toLocaleString("en-US")} events of ${projectId} in ${persistDir}.`);
    } else if (current) {
      console.log(`\nLoading the last ${(total - loaded).toLocaleString("en-US")} of ${total.toLocaleString("en-US")} events into ${projectId}'s current period (${readsPeriodSeconds()} s long)...`);
      await periodsAhead(service.url);
      let load;
      await metered("bulk load, the current period", async () => (load = await batchLoad({ url: service.url, key, total: total - loaded, ip: (from) => benchAddress(loaded + from), makeEvent: (i) => liveEvent(loaded + i) })));
      layout = { ...layout, to: new Date().toISOString(), periodSeconds: Number(readsPeriodSeconds()), current: total - loaded };
      writeFileSync(layoutFile, JSON.stringify(layout));
      report("Bulk load, the current period", [["batch ingest into one project", `${fmt.rate(load.perSecond, "events/s")} (${load.seconds.toFixed(0)} s, live: no occurred_at)`]]);
      await waitIdle(service.processes);
    } else if (loaded > 0) {
      throw new Error(`${persistDir} holds ${loaded} events of ${projectId}, not ${total}: use another BENCH_DATA${spread && layout.current === undefined ? " (or BENCH_READS_CURRENT=1 to load the rest into a current period)" : ""}`);
    } else {
      // BENCH_READS_OLDER=1: the project on the seq index, as one made before keyed row ids (src/model/row-keys.ts),
      // its number taken away before its first event, for the two layouts side by side on one day.
      const older = process.env.BENCH_READS_OLDER === "1";
      if (older) shardSql(persistDir, projectShard(persistDir, projectId), `DELETE FROM project_keys WHERE project_id = '${projectId}'`);
      console.log(`\nLoading ${total.toLocaleString("en-US")} events into ${projectId}${older ? " (on the seq index: no key)" : ""} through the batch endpoint...`);
      let load;
      let cron = null;
      if (spread) {
        // The cron again every 30 s, so each next period is made well before it starts.
        await periodsAhead(service.url);
        cron = setInterval(() => runCron(service.url).catch((error) => console.error("cron:", error.message)), 30_000);
      }
      const from = new Date().toISOString();
      const makeEvent = live ? liveEvent : undefined;
      try {
        await metered("bulk load", async () => (load = await batchLoad({ url: service.url, key, total, ip: benchAddress, makeEvent })));
      } finally {
        if (cron) clearInterval(cron);
      }
      layout = live ? { layout: "live", from, to: new Date().toISOString(), ...(spread ? { periods: true, periodSeconds: Number(readsPeriodSeconds()) } : {}) } : { layout: "scattered" };
      writeFileSync(layoutFile, JSON.stringify(layout));
      report("Bulk load", [["batch ingest into one project", `${fmt.rate(load.perSecond, "events/s")} (${load.seconds.toFixed(0)} s${live ? ", live: no occurred_at" : ""})`]]);
      await waitIdle(service.processes);
    }
    // Whole-project reads (verify, the full export, the log) also cover those witness.* events.
    const { witness } = storedEvents(persistDir, projectShard(persistDir, projectId), projectId);
    // BENCH_READS_ARMS=k: k empty periods in the project's shard before the reads (src/model/periods.ts), as a shard
    // holds five or six with 30 days hot: every read of hot rows then reads k more arms than the main tables.
    if (layout.periods) {
      const shard = projectShard(persistDir, projectId);
      const tables = shardSql(persistDir, shard, "SELECT name FROM sqlite_master WHERE type = 'table' AND (name = 'events' OR name GLOB 'events_p[0-9]*') ORDER BY name").map((r) => r.name);
      const counts = tables.map((t) => `${t} ${shardSql(persistDir, shard, `SELECT count(*) AS n FROM ${t} WHERE project_id = '${projectId}'`)[0].n.toLocaleString("en-US")}`);
      console.log(`\n${projectId} in ${tables.length} arms: ${counts.join(", ")}`);
      // The daily cron, as a deployment runs it once the periods are past their grace: it merges their search
      // indexes (period-upkeep.ts), once. Twice: a run gives them a bounded number of steps.
      const segments = () => tables.filter((t) => t !== "events").map((t) => shardSql(persistDir, shard, `SELECT count(DISTINCT segid) AS n FROM ${t.replace("events", "events_search")}_idx`)[0].n);
      const before = segments();
      if (before.some((n) => n > 1)) {
        const listed = new Set(shardSql(persistDir, shard, "SELECT n FROM periods").map((r) => r.n));
        await resetMeter(service.url);
        for (let run = 0; run < 2; run++) await runCron(service.url);
        // What the merges cost, from the meter (D1's own rows_written): the runs' other work writes next to nothing.
        const written = (await meterRows(service.url)).d1Written;
        // The cron also made the current period and the next (two minutes long here): empty and growing, so every read
        // would read them, unlike a deployment's current period, which holds its newest events. Dropped: the layout as loaded.
        const made = shardSql(persistDir, shard, "SELECT n FROM periods").map((r) => r.n).filter((n) => !listed.has(n));
        if (made.length > 0) {
          const file = join(tempDir("witness-periods"), "drop.sql");
          writeFileSync(file, made.flatMap(dropPeriodSql).map((q) => `${q};`).join("\n"));
          shardSql(persistDir, shard, null, file);
          await new Promise((r) => setTimeout(r, 31_000));
        }
        console.log(
          `search index segments in each period: ${before.join(", ")} before the daily cron, ${segments().join(", ")} after; ` +
            `the two runs wrote ${written.toLocaleString("en-US")} D1 rows (${(written / total).toFixed(3)} an event); the ${made.length} periods they made, empty, dropped`,
        );
      }
    }
    const arms = Number(process.env.BENCH_READS_ARMS ?? 0);
    if (arms > 0) await makeEmptyPeriods(persistDir, projectShard(persistDir, projectId), arms);
    // BENCH_LOAD_ONLY=1: the load and its rate alone (the two layouts' ingest side by side, BENCH_READS_OLDER).
    if (process.env.BENCH_LOAD_ONLY !== "1") {
      for (const m of modules) await metered(m, async () => (await import(`./${m}.bench.mjs`)).default({ ...ctx, key, projectId, total, witness, layout }));
    }
  }
  // Tiers a project of its own (BENCH_ARCHIVE_EVENTS, 1M by default, most of it archived).
  if (want("archive")) await metered("archive", async () => (await import("./archive.bench.mjs")).default(ctx));
  // What an event costs over its life (issue 38): a project of its own (BENCH_COST_EVENTS, 20,000 by default)
  // ingested, archived and purged; it resets the meter before each phase and reports it itself.
  if (want("cost")) await (await import("./cost.bench.mjs")).default(ctx);
  // `load` only loads the jobs bench's project (hours at 10M, resumable), for the jobs and history benches to reuse.
  if (want("load")) {
    const { prepareJobsProject } = await import("./jobs-load.mjs");
    await metered("load of bench-jobs", () => prepareJobsProject({ runtimeUrl: ctx.runtimeUrl, persistDir, total: Number(process.env.BENCH_JOB_EVENTS ?? 10_000_000), report }));
  }
  // Reads across history (issue 22) on bench-jobs (loads only what it lacks) and a hot-only project beside it.
  if (want("history")) await metered("history reads", async () => (await import("./history.bench.mjs")).default(ctx));
  // Its own project (BENCH_JOB_EVENTS, 10M by default, most of it archived); it meters each phase itself.
  let jobs = null;
  if (want("jobs")) jobs = await (await import("./jobs.bench.mjs")).default(ctx);
  if (want("reads") || want("parallel") || jobs) await Promise.all([service.stop(), baseline.stop()]);
  // Without export rounds (BENCH_JOB_EXPORT_ROUNDS=0) there is no export to hold the floor against.
  if (jobs?.archivedExport) {
    // The floor reads Witness's local D1 and R2: Witness has stopped.
    const floor = (await import("./archived-export-floor.bench.mjs")).default;
    await floor({ persistDir, projectId: "bench-jobs", cold: jobs.cold, jobRate: jobs.archivedExport, port: port + 2, report });
  }
  if (jobs) {
    // How far reading the rows alone leaves the job from the loop (the floor reads Witness's local D1 and R2: Witness has stopped).
    const floor = (await import("./verify-floor.bench.mjs")).default;
    await floor({ persistDir, projectId: "bench-jobs", events: jobs.verified, jobRate: jobs.verifyRate, loopRate: jobs.loopRate, port: port + 2, report });
  }
  // The jobs bench's project copied once per runtime (the service has stopped), a chunk in each at a time.
  if (want("parallel")) await (await import("./parallel.bench.mjs")).default({ persistDir, port: port + 30, report });
  if (want("reads") && process.env.BENCH_READS_ONLY === undefined) {
    // The floor opens Witness's local D1, so Witness went first (above); the baseline too (same worker name).
    // It reads every row of the project: the witness.* events the archive bench's cron may have added too.
    const { bench, witness } = storedEvents(persistDir, projectShard(persistDir, "bench-large"), "bench-large");
    // The floor reads the main events table: loaded into periods (BENCH_READS_PERIODS), the project is not there.
    const layoutFile = join(persistDir, "bench-large-layout.json");
    const spread = existsSync(layoutFile) && JSON.parse(readFileSync(layoutFile, "utf8")).periods === true;
    if (spread) console.log("\nExport floor: not measured, bench-large is in periods (the floor reads the main events table)");
    else await (await import("./export-floor.bench.mjs")).default({ persistDir, total: bench + witness, report });
  }
} finally {
  await Promise.all([service.stop(), baseline.stop()]);
}

/** The current period and the next, made by the cron, once writers take them: a writer waits a minute after a period is made (ARM_LEAD_MS). */
async function periodsAhead(url) {
  await runCron(url);
  await new Promise((r) => setTimeout(r, 65_000));
}

/** Makes `k` periods (far past numbers, none holding a row) in a shard, as makePeriod does; waits out every isolate's cached list of arms. */
async function makeEmptyPeriods(persistDir, shard, k) {
  const listed = new Set(shardSql(persistDir, shard, "SELECT n FROM periods").map((r) => r.n));
  const schema = shardSql(persistDir, shard, PERIOD_SCHEMA_SQL);
  const file = join(tempDir("witness-periods"), "periods.sql");
  const made = [];
  for (let n = 1; made.length < k; n++) {
    if (listed.has(n)) {
      made.push(n);
      continue;
    }
    writeFileSync(file, [...periodDdl(schema, n), `INSERT INTO periods (n, made_at) VALUES (${n}, '${new Date().toISOString()}')`].map((q) => `${q};`).join("\n"));
    shardSql(persistDir, shard, null, file);
    made.push(n);
  }
  console.log(`\n${k} empty periods in shard ${shard} (${made.join(", ")}): reads of hot rows read ${k + 1} arms`);
  await new Promise((r) => setTimeout(r, 31_000));
}
