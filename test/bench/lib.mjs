// Benchmark plumbing: start workers under `wrangler dev`, load data, measure.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { applyMigrations, createKey as createProjectKey } from "../../src/scripts/lib.mjs";

export const ROOT = new URL("../..", import.meta.url).pathname;
const WRANGLER = join(ROOT, "node_modules", ".bin", "wrangler");
const ENV = {
  ...process.env,
  // wrangler needs Node 22: the node@22 dev dependency first on PATH, even when run outside npm.
  PATH: `${join(ROOT, "node_modules", ".bin")}:${process.env.PATH}`,
  WRANGLER_SEND_METRICS: "false", NO_COLOR: "1",
  // wrangler dev 4.155 records a trace of every request, Durable Object call and
  // D1 query into a local SQLite store (its local observability dashboard), on
  // the same runtime thread as the worker: ~3-7 ms of a list, ~40% of ingest
  // throughput. A deployed worker does not pay it; both bench workers skip it.
  X_LOCAL_OBSERVABILITY: "false" };

export function tempDir(name) {
  return mkdtempSync(join(tmpdir(), `witness-bench-${name}-`));
}

async function waitFor(url, child, seconds = 90) {
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited (${child.exitCode}) before ${url} answered`);
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 300));
    }
  }
  throw new Error(`${url} did not come up in ${seconds}s`);
}

function descendants(pid) {
  const out = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push(Number(entry), ...descendants(Number(entry)));
    } catch {}
  }
  return out;
}

/**
 * The workerd processes under a wrangler dev: the proxy listening on the port and
 * the runtime holding the worker, D1 and R2. Looked up on each call, because the
 * runtime is restarted when wrangler reloads.
 */
function workerdProcesses(rootPid, port) {
  const found = {};
  for (const pid of descendants(rootPid)) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== "workerd") continue;
      const proxy = readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(`entry=127.0.0.1:${port}`);
      found[proxy ? "proxy" : "runtime"] = pid;
    } catch {}
  }
  return found;
}

/**
 * Ports a process listens on at 127.0.0.1, in the order it opened them (by
 * file descriptor): its socket inodes matched against /proc/net/tcp.
 */
function listeningPorts(pid) {
  const fdOf = new Map();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) fdOf.set(m[1], Number(fd));
    } catch {}
  }
  const found = [];
  for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    // f[1] local address (hex ip:port), f[3] state (0A = LISTEN), f[9] inode
    if (f[3] === "0A" && f[1].startsWith("0100007F:") && fdOf.has(f[9])) found.push({ fd: fdOf.get(f[9]), port: parseInt(f[1].split(":")[1], 16) });
  }
  return found.sort((a, b) => a.fd - b.fd).map((s) => s.port);
}

/**
 * The runtime's own HTTP socket behind wrangler dev's proxy. wrangler dev 4
 * answers on a proxy worker in a second workerd process that forwards every
 * request to the runtime (for reloads); a deployed worker has no such hop, and
 * on this 2-core machine it costs a request ~3 ms. The runtime opens its entry
 * socket first, then its inspector and its debug port (Cap'n Proto), so
 * sockets are tried in that order, and the first that answers a made-up path
 * exactly as the proxy does is taken: the others are not sent HTTP they do
 * not speak.
 */
async function findRuntimeUrl(url, runtimePid) {
  const probe = `/bench-probe-${Date.now()}`;
  // agent: false, a connection each: none is left idle in a pool for later requests.
  const get = (base) => httpRequest(`${base}${probe}`, { agent: false });
  const expected = await get(url);
  for (const port of listeningPorts(runtimePid)) {
    const candidate = `http://127.0.0.1:${port}`;
    const res = await get(candidate).catch(() => null);
    if (res && res.status === expected.status && res.body.equals(expected.body)) return candidate;
  }
  throw new Error(`no socket of workerd ${runtimePid} answers like ${url}`);
}

/** A zombie (exited, not yet reaped) holds nothing open. */
function running(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** Starts `wrangler dev` for a config; returns its URL, its workerd processes (for memory) and stop(). */
export async function startWorker({ port, configDir = ROOT, persistDir, vars = {}, testScheduled = false, script = null }) {
  const inspectorPort = port + 1000;
  // script: another entry than the config's main (the jobs bench's test/bench/jobs-entry.ts).
  const args = ["dev", ...(script ? [script] : []), "--port", String(port), "--ip", "127.0.0.1", "--log-level", process.env.BENCH_WRANGLER_LOG ?? "error", "--show-interactive-dev-session=false"];
  // GET /__scheduled runs the daily cron on demand (the archive bench tiers a project with it).
  if (testScheduled) args.push("--test-scheduled");
  args.push("--inspector-port", String(inspectorPort));
  if (persistDir) args.push("--persist-to", persistDir);
  for (const [k, v] of Object.entries(vars)) args.push("--var", `${k}:${v}`);
  const child = spawn(WRANGLER, args, { cwd: configDir, env: ENV, stdio: ["ignore", "ignore", "inherit"], detached: true });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(url, child);
  return {
    url,
    inspectorPort,
    processes: () => workerdProcesses(child.pid, port),
    /** The same worker without wrangler dev's proxy in front (see findRuntimeUrl). */
    runtimeUrl: () => findRuntimeUrl(url, workerdProcesses(child.pid, port).runtime),
    /** Resolves once wrangler and its workerd processes are gone (so another may open the same state). */
    async stop() {
      const all = [child.pid, ...descendants(child.pid)];
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {}
      for (let waited = 0; waited < 15_000 && all.some(running); waited += 100) {
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

/**
 * Secrets of a bench data directory, made on its first run and kept beside
 * the data: events stay verifiable when BENCH_DATA reuses the directory.
 */
function benchSecrets(persistDir) {
  const file = join(persistDir, "bench-secrets.json");
  // Directories made before log streams existed kept no stream key: one is added (it encrypts only new streams).
  if (existsSync(file)) return { STREAM_SECRETS_KEY: randomBytes(32).toString("base64url"), ...JSON.parse(readFileSync(file, "utf8")) };
  const receiptKey = generateKeyPairSync("ed25519").privateKey.export({ format: "der", type: "pkcs8" });
  const secrets = {
    SIGNING_KEYS: `1:${randomBytes(32).toString("base64url")}`,
    EMBED_TOKEN_SECRET: randomBytes(32).toString("base64url"),
    RECEIPT_SIGNING_KEYS: `bench:${receiptKey.toString("base64url")}`,
    STREAM_SECRETS_KEY: randomBytes(32).toString("base64url"),
  };
  writeFileSync(file, JSON.stringify(secrets));
  return secrets;
}

/** The Witness worker with its own local state, bench secrets and rate limits out of the way. */
export async function startWitness({ port, persistDir, script = null }) {
  applyMigrations({ persistTo: persistDir });
  return startWorker({
    port,
    persistDir,
    script,
    testScheduled: true,
    vars: {
      ...benchSecrets(persistDir),
      RATE_LIMIT_INGEST_PER_MIN: "1000000000",
      RATE_LIMIT_OTHER_PER_MIN: "1000000000",
      // The streams bench delivers to a receiver on this machine.
      ALLOW_PRIVATE_STREAM_TARGETS: "true",
      // Every request, cron run, Durable Object call and alarm is metered and fails past
      // Cloudflare's per-invocation limits, as in production; GET /__meter reads the counts.
      METER: "enforce",
      // Without periods unless asked (the default deploys with them on): the floors and the layouts the benches
      // load are the main tables', and no week-long period is made by a bench's cron.
      PERIODS: "off",
      // BENCH_PERIODS=1: periods on, two minutes long, and the default window 0 days, so a period is sealed and
      // dropped within minutes of its events (cost.bench.mjs; src/model/periods.ts).
      ...(process.env.BENCH_PERIODS === "1" ? { PERIODS: "on", PERIOD_SECONDS: "120", DEFAULT_HOT_DAYS: "0" } : {}),
      // BENCH_READS_PERIODS=1: periods on and two minutes long (BENCH_READS_PERIOD_SECONDS), the window as deployed
      // (30 days): bench-large loads into a period every two minutes, none sealed, so its reads read every arm as a
      // shard with periods does.
      ...(process.env.BENCH_READS_PERIODS === "1" ? { PERIODS: "on", PERIOD_SECONDS: readsPeriodSeconds() } : {}),
    },
  });
}

/** BENCH_READS_PERIOD_SECONDS: how long a period of the reads bench's spread layout is (120 unless set); a layout is read with the length it was loaded with (run.mjs). */
export function readsPeriodSeconds() {
  const s = process.env.BENCH_READS_PERIOD_SECONDS ?? "120";
  if (!/^[1-9][0-9]*$/.test(s)) throw new Error(`BENCH_READS_PERIOD_SECONDS=${s}: a whole number of seconds`);
  return s;
}

/** USER_HZ: /proc counts CPU time in ticks of 10 ms on Linux. */
const TICK = 100;

/** A process's CPU seconds so far (user + system), from /proc. */
export function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / TICK;
}

/**
 * Waits until the service's runtime is idle (under 10% of a core for two samples of 2 s), at most `maxMs`: after
 * a large load a ledger goes on in the background (its rollups, the search index's merges), and a read timed
 * meanwhile measured it too (20-70% slower: test/bench/README.md, "Fewer, longer periods"). `processes`: the
 * service's (startWitness), looked up at each sample, as wrangler may restart its runtime.
 */
export async function waitIdle(processes, maxMs = 300_000) {
  const cpu = () => {
    const { runtime } = processes();
    return runtime === undefined ? null : { runtime, s: cpuSeconds(runtime) };
  };
  const started = Date.now();
  let last = cpu();
  let quiet = 0;
  while (quiet < 2 && Date.now() - started < maxMs) {
    await new Promise((r) => setTimeout(r, 2000));
    const now = cpu();
    quiet = now !== null && last !== null && now.runtime === last.runtime && now.s - last.s < 0.2 ? quiet + 1 : 0;
    last = now;
  }
  const s = ((Date.now() - started) / 1000).toFixed(0);
  console.log(quiet >= 2 ? `Runtime idle after ${s} s.` : `Runtime still busy after ${s} s; reading anyway.`);
}

/** The meter's totals of rows read and written since the last resetMeter() (D1's and Durable Object SQLite's). */
export async function meterRows(url) {
  const res = await fetch(`${url}/__meter`, { headers: { "CF-Connecting-IP": "127.0.0.20" } });
  if (res.status !== 200) throw new Error(`GET /__meter answered ${res.status}: ${await res.text()}`);
  return (await res.json()).data.rows;
}

/** Empties the service's invocation meter (POST /__meter/reset; the route exists because METER = "enforce"). */
export async function resetMeter(url) {
  const res = await httpRequest(`${url}/__meter/reset`, { method: "POST", agent: false, headers: { "CF-Connecting-IP": "127.0.0.20" } });
  if (res.status !== 204) throw new Error(`POST /__meter/reset answered ${res.status}: ${res.body}`);
}

/**
 * Reports the worst invocation of each operation since the last resetMeter(): its D1
 * queries and subrequests against Cloudflare's per-invocation limits, and the rows it
 * read and wrote (billed per million: D1's statement meta, Durable Object SQLite cursors). One isolate
 * holds the Worker and its Durable Objects under wrangler dev, so their calls
 * (ProjectLedger.append, StreamDelivery.alarm, ...) are in it too. Paths that differ
 * only in a number (log tiles: /tile/0/000, /tile/0/006) are one operation here; the
 * invocations that used neither (a Durable Object's lighter methods) are counted, not
 * listed. Returns the rows.
 */
export async function reportMeter(url, title) {
  const res = await httpRequest(`${url}/__meter`, { agent: false, headers: { "CF-Connecting-IP": "127.0.0.20" } });
  if (res.status !== 200) throw new Error(`GET /__meter answered ${res.status}: ${res.body}`);
  const { limits, invocations } = JSON.parse(res.body).data;
  const worst = new Map();
  for (const r of invocations) {
    const name = r.invocation.replace(/\/\d+(?=\/|$)/g, "/:n");
    const seen = worst.get(name) ?? { invocation: name, d1Queries: 0, subrequests: 0, rowsRead: 0, rowsWritten: 0 };
    worst.set(name, {
      invocation: name,
      d1Queries: Math.max(seen.d1Queries, r.d1Queries),
      subrequests: Math.max(seen.subrequests, r.subrequests),
      rowsRead: Math.max(seen.rowsRead, r.rowsRead ?? 0),
      rowsWritten: Math.max(seen.rowsWritten, r.rowsWritten ?? 0),
    });
  }
  const rows = [...worst.values()].sort((a, b) => b.subrequests - a.subrequests || b.d1Queries - a.d1Queries);
  const used = rows.filter((r) => r.d1Queries > 0 || r.subrequests > 0);
  const n = (v) => v.toLocaleString("en-US");
  const share = (v, limit) => `${n(v)}${v === 0 ? "" : ` (${((100 * v) / limit).toFixed(v * 1000 < limit ? 2 : 1)}%)`}`;
  const width = Math.max(...used.map((r) => share(r.d1Queries, limits.d1Queries).length), 1);
  const idle = rows.length - used.length;
  report(`Worst invocation of each operation, ${title} (per-invocation limits: ${n(limits.d1Queries)} D1 queries, ${n(limits.subrequests)} subrequests)`, [
    ...used.map((r) => [
      r.invocation,
      `D1 queries ${share(r.d1Queries, limits.d1Queries).padStart(width)}   subrequests ${share(r.subrequests, limits.subrequests)}   rows written ${n(r.rowsWritten)}, read ${n(r.rowsRead)} (D1 and Durable Object SQLite)`,
    ]),
    ...(idle > 0 || used.length === 0 ? [[`${idle} more with no D1 query and no subrequest`, ""]] : []),
  ]);
  return rows;
}

export async function startBaseline({ port }) {
  const persistDir = tempDir("baseline");
  // Its D1 insert floor writes Witness's tables: its local D1 (the same database id) gets Witness's migrations.
  applyMigrations({ persistTo: persistDir });
  return { ...(await startWorker({ port, configDir: join(ROOT, "test", "bench", "baseline"), persistDir })), persistDir };
}

/** A project and key straight in the local D1 of persistDir (works while dev runs). */
export function createKey(persistDir, projectId) {
  return createProjectKey(projectId, { persistTo: persistDir }).key;
}

const ACTIONS = ["user.login.succeeded", "user.login.failed", "document.shared", "document.deleted", "billing.plan.changed", "member.invited"];

/** A realistic event; a few rare values make selective filters and searches possible. */
export function sampleEvent(i) {
  const rare = i % 10_000 === 0;
  return {
    action: rare ? "security.key.rotated" : ACTIONS[i % ACTIONS.length],
    organization: `org_${i % 50}`,
    actor: { id: `user_${i % 5000}`, type: "user", name: rare ? `Zebulon ${i}` : `User ${i % 5000}`, email: `user${i % 5000}@acme.test` },
    targets: [{ type: "document", id: `doc_${i % 20000}`, name: "Quarterly plan" }],
    metadata: { plan: "pro", request: i },
    // Spread over ~a year, not in ingest order, like backfilled data.
    // A year ending before today: events more than 5 minutes in the future are refused.
    occurred_at: new Date(Date.UTC(2025, 10, 15) + ((i * 7919) % 31_536_000) * 1000).toISOString(),
  };
}

/**
 * The instants the read and verify benches read at: in sampleEvent's year (scattered), or within
 * the load's own window when the project was loaded live (BENCH_READS_LIVE=1, run.mjs): its middle,
 * a twelfth of it a third of the way in, as March is of the year, and the end of verify's warm-up.
 */
export function readTimes(layout) {
  if (layout?.layout !== "live") {
    return { middle: "2026-07-01T00:00:00.000Z", from: "2026-03-01T00:00:00.000Z", to: "2026-03-31T23:59:59.999Z", rangeMiddle: "2026-03-16T00:00:00.000Z", warm: "2026-01-02T00:00:00.000Z" };
  }
  const start = Date.parse(layout.from);
  const span = Date.parse(layout.to) - start;
  const at = (share) => new Date(start + Math.round(span * share)).toISOString();
  return { middle: at(1 / 2), from: at(4 / 12), to: at(5 / 12), rangeMiddle: at(4.5 / 12), warm: at(1 / 8) };
}

/** sampleEvent as the client package sends it: no occurred_at, so it happens when received. */
export function liveEvent(i) {
  const { occurred_at: _, ...event } = sampleEvent(i);
  return event;
}

/**
 * The large project's addresses (reads.bench.mjs filters on each): most
 * requests come from one, 1 in 100 from a second, 1 in 1,000 from a third.
 */
export function benchAddress(from, batchSize = 100) {
  const request = Math.floor(from / batchSize);
  return request % 1000 === 500 ? "127.0.0.12" : request % 100 === 50 ? "127.0.0.11" : "127.0.0.2";
}

/**
 * Loads `total` events through POST /v1/events/batch; returns events per second.
 * Its own connections (node:http, kept alive for the run only): Node's fetch
 * reused a connection its readiness check had left idle for minutes, which
 * the dev proxy had dropped, and a batch sent on it was cut off.
 */
export async function batchLoad({ url, key, total, concurrency = 6, batchSize = 100, makeEvent = sampleEvent, ip = "127.0.0.2" }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  // `ip`: one address, or the address of the request whose first event is event `from` (an event's ip_address is its request's).
  const headersOf = (from) => ({ Authorization: `Bearer ${key}`, "Content-Type": "application/json", "CF-Connecting-IP": typeof ip === "function" ? ip(from) : ip });
  let next = 0;
  const started = performance.now();
  async function worker() {
    while (next < total) {
      const from = next;
      next = Math.min(total, next + batchSize);
      const events = [];
      for (let i = from; i < next; i++) events.push(makeEvent(i));
      const res = await httpRequest(`${url}/v1/events/batch`, { method: "POST", headers: headersOf(from), agent }, JSON.stringify({ events }));
      if (res.status !== 201) throw new Error(`batch ingest answered ${res.status}: ${res.body}`);
    }
  }
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    agent.destroy();
  }
  const seconds = (performance.now() - started) / 1000;
  return { total, seconds, perSecond: total / seconds };
}

/** One request with node:http; resolves with the status and the whole body once it is in. */
function httpRequest(url, options, body) {
  return new Promise((resolve, reject) => {
    http
      .request(url, options, (res) => {
        const chunks = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
        res.on("error", reject);
      })
      .on("error", reject)
      .end(body);
  });
}

const keepAlive = new http.Agent({ keepAlive: true });

/**
 * GET over one kept-alive connection with node:http; resolves with the status
 * and the whole body. For latency: Node's fetch (undici) added ~2.5 ms at p50
 * and ~4 ms at p95 to every request on this machine, time spent in the
 * client, not in the service (wrk measured the same list at 8.9 ms average).
 */
export function httpGet(url, headers = {}) {
  return httpRequest(url, { agent: keepAlive, headers });
}

/** Reads a streamed body to the end without keeping it: its bytes and its line feeds. */
export async function countLines(body) {
  let lines = 0;
  let bytes = 0;
  for await (const chunk of body) {
    bytes += chunk.length;
    for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) lines++;
  }
  return { lines, bytes };
}

export function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * Sequential latency of several requests, in rounds: each round sends every
 * one of fns once, so a slow spell of this shared machine lands on all of them
 * alike instead of on whichever case ran then. Returns p50/p95/p99 in ms per fn.
 */
export async function latencies(fns, iterations = 200, warmup = 10) {
  for (let i = 0; i < warmup; i++) for (const fn of fns) await fn();
  const times = fns.map(() => []);
  for (let i = 0; i < iterations; i++) {
    for (let f = 0; f < fns.length; f++) {
      const t = performance.now();
      await fns[f]();
      times[f].push(performance.now() - t);
    }
  }
  return times.map((list) => {
    list.sort((a, b) => a - b);
    return { p50: percentile(list, 50), p95: percentile(list, 95), p99: percentile(list, 99) };
  });
}

/** Samples a process's resident memory every 100 ms until stop(); returns the peak in MiB. */
export function sampleRss(pid) {
  let peak = 0;
  const read = () => {
    try {
      const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
      peak = Math.max(peak, kb);
    } catch {}
  };
  read();
  const timer = setInterval(read, 100);
  return {
    stop() {
      clearInterval(timer);
      read();
      return peak / 1024;
    },
  };
}

/**
 * Samples the Worker isolate's V8 heap (its Durable Objects share it) through
 * wrangler's inspector: what the Worker itself holds. The runtime's RSS also
 * carries local D1's SQLite and R2, which grow with the data they touch.
 */
export async function sampleHeap(inspectorPort) {
  const ws = new WebSocket(`ws://127.0.0.1:${inspectorPort}/ws`);
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  let next = 0;
  const waiting = new Map();
  ws.on("message", (data) => {
    const message = JSON.parse(String(data));
    waiting.get(message.id)?.(message.result);
    waiting.delete(message.id);
  });
  const usage = () =>
    new Promise((resolve) => {
      const id = ++next;
      waiting.set(id, resolve);
      ws.send(JSON.stringify({ id, method: "Runtime.getHeapUsage" }));
    });
  const mib = (bytes) => bytes / 2 ** 20;
  const first = await usage();
  let peak = first.usedSize;
  const timer = setInterval(async () => (peak = Math.max(peak, (await usage()).usedSize)), 100);
  return {
    beforeMiB: mib(first.usedSize),
    async stop() {
      clearInterval(timer);
      peak = Math.max(peak, (await usage()).usedSize);
      ws.close();
      return mib(peak);
    },
  };
}

export function ensureWrk() {
  if (spawnSync("which", ["wrk"]).status === 0) return;
  console.log("Installing wrk from Debian (HTTP load generator)...");
  execFileSync("sh", ["-c", "apt-get update -qq && apt-get install -y -qq wrk >/dev/null"], { stdio: "inherit" });
}

/** wrk -c<connections> against one POST; returns req/s and latency percentiles in ms. */
export function wrk({ url, body, headers = {}, connections = 32, seconds = 10, threads = 2 }) {
  const script = join(tempDir("wrk"), "post.lua");
  const lines = ['wrk.method = "POST"', `wrk.body = ${JSON.stringify(body)}`];
  for (const [k, v] of Object.entries({ "Content-Type": "application/json", ...headers })) {
    lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
  }
  writeFileSync(script, lines.join("\n"));
  const out = execFileSync("wrk", ["-t", String(threads), "-c", String(connections), "-d", `${seconds}s`, "--latency", "-s", script, url], {
    encoding: "utf8",
  });
  const ms = (label) => {
    const m = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s)`, "m").exec(out);
    if (!m) return NaN;
    return Number(m[1]) * (m[2] === "us" ? 0.001 : m[2] === "s" ? 1000 : 1);
  };
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)[1]),
    p50: ms("50"),
    p99: ms("99"),
    errors: non2xx ? Number(non2xx[1]) : 0,
  };
}

export function report(title, rows) {
  console.log(`\n== ${title}`);
  const width = Math.max(...rows.map(([label]) => label.length));
  for (const [label, value] of rows) console.log(`  ${label.padEnd(width)}  ${value}`);
}

export const fmt = {
  ms: (v) => `${v.toFixed(2)} ms`,
  rate: (v, unit) => `${Math.round(v).toLocaleString("en-US")} ${unit}`,
  pct: (v) => `${(v * 100).toFixed(0)}%`,
};

/** One API request on a connection of its own unless `agent` is given (no idle pooled connection the dev proxy dropped); resolves with the answer's data. */
export function apiCall(url, key, method, path, body, { agent = false, ip = "127.0.0.4" } = {}) {
  return new Promise((resolve, reject) => {
    const headers = { Authorization: `Bearer ${key}`, "Content-Type": "application/json", "CF-Connecting-IP": ip };
    http
      .request(`${url}${path}`, { method, headers, agent }, (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          if (res.statusCode >= 300) return reject(new Error(`${method} ${path} answered ${res.statusCode}: ${text}`));
          resolve(text ? JSON.parse(text).data : null);
        });
      })
      .on("error", reject)
      .end(body === undefined ? undefined : JSON.stringify(body));
  });
}
