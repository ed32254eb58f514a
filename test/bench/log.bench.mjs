// Issue 13 benchmark: the large project's transparency log. Inclusion proofs and
// public tiles (p50/p95, through the dev proxy and at the runtime), and the monitor
// proving 1 -> N from the tiles it fetches. On a BENCH_DATA loaded before the log
// existed, the ledger builds the tree on first wake: that backfill is timed too.
import { base64Encode } from "../../src/tlog/encoding.ts";
import { monitorLog } from "../../src/tlog/monitor.ts";
import { TILE_WIDTH, decodeTile, levelEntries, tilePath } from "../../src/tlog/tiles.ts";
import { fmt, httpGet, latencies } from "./lib.mjs";

const ITERATIONS = Number(process.env.BENCH_READ_ITERATIONS ?? 200);

export default async function logBench({ url, runtimeUrl, key, total: events, witness, report }) {
  // The log holds every event: the bench's and the cron's witness.key.created records of its keys (run.mjs).
  const total = events + witness;
  const headers = { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.11" };
  const get = async (base, path, auth = true) => {
    const res = await httpGet(`${base}${path}`, auth ? headers : { "CF-Connecting-IP": "127.0.0.12" });
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${String(res.body).slice(0, 300)}`);
    return res.body;
  };
  const info = async () => JSON.parse(await get(url, "/v1/log")).data;

  // A tree that predates the log is built by the ledger's alarm, woken by this first request.
  const wake = performance.now();
  let log = await info();
  const building = log.status === "building";
  while (log.status === "building") {
    await new Promise((r) => setTimeout(r, 1000));
    log = await info();
  }
  if (log.status !== "ready" || log.tree_size !== total) throw new Error(`the log is not ready over ${total} events: ${JSON.stringify({ ...log, checkpoint: undefined })}`);
  const backfillSeconds = (performance.now() - wake) / 1000;

  // 240 events spread over the chain (the list reaches any part of it by a timestamp cursor).
  const ids = [];
  for (let m = 1; m <= 12; m++) {
    const page = JSON.parse(await get(url, `/v1/events?limit=20&cursor=2026-${String(m).padStart(2, "0")}-28T00:00:00.000Z`)).data;
    ids.push(...page.map((e) => e.id));
  }
  const publicPath = new URL(log.public_url).pathname;
  const full = Array.from({ length: 60 }, (_, i) => tilePath(0, Math.floor((i * levelEntries(0, total)) / TILE_WIDTH / 60)));
  const partial = tilePath(0, Math.floor(total / TILE_WIDTH), total % TILE_WIDTH || TILE_WIDTH);
  // The full tiles measured come from R2: the first read of each (through the ledger) stored it there.
  for (const t of full) await get(url, `${publicPath}/${t}`, false);

  const bases = [["through wrangler dev's proxy", url], ["at the runtime (no dev proxy)", runtimeUrl]];
  const cycle = (list, fn) => {
    let i = 0;
    return () => fn(list[i++ % list.length]);
  };
  const fns = bases.flatMap(([, base]) => [
    cycle(ids, (id) => get(base, `/v1/events/${id}/proof`)),
    cycle(full, (t) => get(base, `${publicPath}/${t}`, false)),
    () => get(base, `${publicPath}/${partial}`, false),
    () => get(base, `${publicPath}/checkpoint`, false),
    () => get(base, `/v1/log/consistency?from=1`),
  ]);
  const results = await latencies(fns, ITERATIONS);
  const labels = ["GET /v1/events/:id/proof", "full tile (R2)", "partial tile (ledger)", "checkpoint", "GET /v1/log/consistency?from=1"];
  const rows = bases.flatMap(([name], b) =>
    labels.map((label, i) => {
      const r = results[b * labels.length + i];
      return [`${label}, ${name}`, `p50 ${fmt.ms(r.p50)} / p95 ${fmt.ms(r.p95)}`];
    }),
  );

  // The monitor, as a customer runs it: from a saved tree of 1 to the whole log, from tiles only.
  const tile0 = decodeTile(new Uint8Array(await (await fetch(`${url}${publicPath}/tile/0/000`)).arrayBuffer()), TILE_WIDTH);
  let fetched = 0;
  const counting = (u) => {
    if (u.includes("/tile/")) fetched++;
    return fetch(u);
  };
  const started = performance.now();
  const mon = await monitorLog({ publicUrl: log.public_url, vkey: log.vkey, saved: { tree_size: 1, root_hash: base64Encode(tile0[0]) }, fetch: counting });
  const monitorSeconds = (performance.now() - started) / 1000;
  if (mon.status !== "ok") throw new Error(`monitor: ${JSON.stringify(mon)}`);

  report(`Transparency log (${total.toLocaleString("en-US")} events, ${ITERATIONS} rounds)`, [
    ...(building ? [["tree built for a project that predates the log", `${backfillSeconds.toFixed(1)} s (${fmt.rate(total / backfillSeconds, "events/s")})`]] : []),
    ...rows,
    ["monitor, consistency 1 -> N from tiles", `${monitorSeconds.toFixed(2)} s, ${fetched} tiles fetched (target < 5 s, O(log n) tiles)`],
  ]);
}
