// Issue 35 benchmark: what the action catalog costs where it runs on every event.
// - Ingest with mode enforce and a realistic schema on every event's action, against mode off, in
//   alternating rounds of the same run: target, validation costs at most 10% of batch throughput.
// - The list page at BENCH_EVENTS events with every event's display sentence rendered, against the
//   same page without templates, in alternating phases: target, at most +2 ms at p95.
// - GET /v1/actions on a project of BENCH_ACTIONS_EVENTS events (default BENCH_EVENTS) over 500
//   actions: target, p95 under 20 ms.
import http from "node:http";
import { projectShard, storedEvents } from "./archive-helpers.mjs";
import { batchLoad, createKey, fmt, httpGet, latencies, sampleEvent, wrk } from "./lib.mjs";

const ACTIONS = ["user.login.succeeded", "user.login.failed", "document.shared", "document.deleted", "billing.plan.changed", "member.invited", "security.key.rotated"];
const ITERATIONS = Number(process.env.BENCH_READ_ITERATIONS ?? 200);

/** What sampleEvent() carries, declared: the schema every event is checked against under enforce. */
const schema = (display) => ({
  description: "bench",
  metadata: {
    type: "object",
    properties: { plan: { enum: ["free", "pro", "enterprise"] }, request: { type: "integer", minimum: 0 } },
    required: ["plan", "request"],
    additionalProperties: false,
  },
  targets: [{ type: "document", required: true }],
  actor_types: ["user"],
  filterable: ["plan"],
  display: display ? "{actor.name|actor.id} did {action} on {targets.document.name|targets.document.id} ({metadata.plan}, request {metadata.request})" : null,
});

function send(url, key, method, path, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { method, headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", "CF-Connecting-IP": "127.0.0.12" } }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        if (res.statusCode >= 300) reject(new Error(`${method} ${path} answered ${res.statusCode}: ${text}`));
        else resolve(JSON.parse(text));
      });
    });
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

async function catalogOf(url, key, { display, mode }) {
  for (const action of ACTIONS) await send(url, key, "PUT", `/v1/schemas/${action}`, schema(display));
  await send(url, key, "PUT", "/v1/catalog/settings", { mode });
}

const mean = (list) => list.reduce((a, b) => a + b, 0) / list.length;

export default async function catalogBench({ url, runtimeUrl, persistDir, key, projectId, total, report }) {
  // 1. Ingest, enforce against off: the same schemas in both projects, only the mode differs.
  const off = createKey(persistDir, "bench-catalog-off");
  const enforce = createKey(persistDir, "bench-catalog-enforce");
  await catalogOf(runtimeUrl, off, { display: true, mode: "off" });
  await catalogOf(runtimeUrl, enforce, { display: true, mode: "enforce" });
  const perRound = Number(process.env.BENCH_CATALOG_EVENTS ?? 20_000);
  const live = (i) => ({ ...sampleEvent(i), occurred_at: undefined });
  const batch = { off: [], enforce: [] };
  const single = { off: [], enforce: [] };
  const body = JSON.stringify(live(1));
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const round = Math.max(2, Math.round(seconds / 2));
  for (let r = 0; r < 3; r++) {
    batch.off.push((await batchLoad({ url: runtimeUrl, key: off, total: perRound, makeEvent: live })).perSecond);
    batch.enforce.push((await batchLoad({ url: runtimeUrl, key: enforce, total: perRound, makeEvent: live })).perSecond);
    single.off.push(wrk({ url: `${runtimeUrl}/v1/events`, body, headers: { Authorization: `Bearer ${off}`, "CF-Connecting-IP": "127.0.0.13" }, seconds: round }).rps);
    single.enforce.push(wrk({ url: `${runtimeUrl}/v1/events`, body, headers: { Authorization: `Bearer ${enforce}`, "CF-Connecting-IP": "127.0.0.14" }, seconds: round }).rps);
  }
  const batchRatio = mean(batch.enforce) / mean(batch.off);
  const singleRatio = mean(single.enforce) / mean(single.off);

  // 2. The list page of the large project, with and without sentences, in alternating phases
  //    (the catalog is the project's, so the two cannot share one round).
  const headers = { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.15" };
  const list = async () => {
    const res = await httpGet(`${runtimeUrl}/v1/events?limit=50`, headers);
    if (res.status !== 200) throw new Error(`list answered ${res.status}`);
  };
  const phases = { plain: [], display: [] };
  for (let r = 0; r < 3; r++) {
    await catalogOf(runtimeUrl, key, { display: false, mode: "off" });
    phases.plain.push((await latencies([list], ITERATIONS))[0]);
    await catalogOf(runtimeUrl, key, { display: true, mode: "off" });
    phases.display.push((await latencies([list], ITERATIONS))[0]);
  }
  const sample = await send(runtimeUrl, key, "GET", `/v1/events?limit=1&action=${ACTIONS[0]}`);
  const p95 = (list) => mean(list.map((l) => l.p95));

  // 3. GET /v1/actions over 500 actions.
  const actionsProject = "bench-actions";
  const actionsKey = createKey(persistDir, actionsProject);
  const actionsTotal = Number(process.env.BENCH_ACTIONS_EVENTS ?? total);
  const { bench: loaded } = storedEvents(persistDir, projectShard(persistDir, actionsProject), actionsProject);
  if (loaded === 0) {
    console.log(`\nLoading ${actionsTotal.toLocaleString("en-US")} events over 500 actions into ${actionsProject}...`);
    await batchLoad({ url: runtimeUrl, key: actionsKey, total: actionsTotal, makeEvent: (i) => ({ ...sampleEvent(i), action: `bench.action.${String(i % 500).padStart(3, "0")}` }) });
  } else if (loaded !== actionsTotal) throw new Error(`${persistDir} holds ${loaded} events of ${actionsProject}, not ${actionsTotal}: use another BENCH_DATA`);
  const actionsHeaders = { Authorization: `Bearer ${actionsKey}`, "CF-Connecting-IP": "127.0.0.16" };
  const first = await send(runtimeUrl, actionsKey, "GET", "/v1/actions?limit=100");
  if (first.data.length !== 100) throw new Error(`GET /v1/actions listed ${first.data.length} of 100`);
  const get = (path) => async () => {
    const res = await httpGet(`${runtimeUrl}${path}`, actionsHeaders);
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
  };
  const [firstPage, deepPage, prefixed] = await latencies(
    [get("/v1/actions?limit=100"), get(`/v1/actions?limit=100&cursor=${encodeURIComponent(first.nextCursor)}`), get("/v1/actions?prefix=bench.action.4")],
    ITERATIONS,
  );

  report("Action catalog (issue 35; at the runtime, no dev proxy)", [
    ["batch ingest, mode off (100/request, 6 in flight, 3 rounds)", `${fmt.rate(mean(batch.off), "events/s")} (rounds ${batch.off.map((r) => r.toFixed(0)).join(", ")})`],
    ["batch ingest, mode enforce, every event checked", `${fmt.rate(mean(batch.enforce), "events/s")} (rounds ${batch.enforce.map((r) => r.toFixed(0)).join(", ")}): ${fmt.pct(batchRatio)} of off; target >= 90%`],
    ["single-event ingest, off / enforce (wrk -c32)", `${fmt.rate(mean(single.off), "req/s")} / ${fmt.rate(mean(single.enforce), "req/s")}: ${fmt.pct(singleRatio)} of off`],
    [`list p95, ${total.toLocaleString("en-US")} events, 50 a page, no templates`, `${fmt.ms(p95(phases.plain))} (p50 ${fmt.ms(mean(phases.plain.map((l) => l.p50)))})`],
    ["list p95, the same page with every sentence rendered", `${fmt.ms(p95(phases.display))} (p50 ${fmt.ms(mean(phases.display.map((l) => l.p50)))}): ${(p95(phases.display) - p95(phases.plain)).toFixed(2)} ms more; target <= +2 ms`],
    ["a rendered sentence", JSON.stringify(sample.data[0]?.display ?? null)],
    [`GET /v1/actions p95, ${actionsTotal.toLocaleString("en-US")} events over 500 actions`, `first page ${fmt.ms(firstPage.p95)}, second page ${fmt.ms(deepPage.p95)}, prefix ${fmt.ms(prefixed.p95)}; target < 20 ms`],
  ]);
}
