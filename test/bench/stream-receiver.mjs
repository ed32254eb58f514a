// A log-stream destination for the streams bench: node:http on 127.0.0.1, answers 204 at once,
// and checks what arrives per path (one path per stream): every seq once, in order, none missing,
// from the first seq that arrives on; waitForAll checks that one is where the stream starts
// (a new stream delivers after its own witness.stream.created event, a replay from its from_seq).
// Paths under /hang/ take the request and never answer (a destination that hangs).
// Understands the webhook body ({events: [...]}) and Datadog's gzipped array (each entry's message
// is the event). It does not verify signatures: the suite does that; here it would only take CPU
// from the service on the same machine.
//
// The server runs in a worker thread: the bench's wrk runs block the main thread (execFileSync),
// and a receiver on it would stop answering for whole rounds, which the streams see as timeouts.
import http from "node:http";
import { isMainThread, parentPort, Worker } from "node:worker_threads";
import { gunzipSync } from "node:zlib";

if (!isMainThread) serve();

function serve() {
  const paths = new Map();
  const stateOf = (path) => {
    if (!paths.has(path)) paths.set(path, { first: null, last: 0, count: 0, requests: 0, repeats: 0, errors: [], arrivals: [], batchIds: new Set() });
    return paths.get(path);
  };
  const error = (s, text) => s.errors.length < 10 && s.errors.push(text);

  function take(path, headers, raw) {
    const s = stateOf(path);
    s.requests++;
    const now = Date.now();
    const body = headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw;
    const parsed = JSON.parse(body.toString("utf8"));
    const events = Array.isArray(parsed) ? parsed.map((entry) => JSON.parse(entry.message)) : parsed.events;
    const id = headers["webhook-id"] ?? `${events[0]?.seq}-${events.at(-1)?.seq}`;
    // The service repeats a whole batch, same webhook-id, when an answer did not reach it: at least once.
    if (s.batchIds.has(id)) {
      s.repeats++;
      return;
    }
    s.batchIds.add(id);
    for (const e of events) {
      if (s.first === null) (s.first = e.seq), (s.last = e.seq - 1);
      if (e.seq !== s.last + 1) error(s, `${path}: seq ${e.seq} arrived after ${s.last}`);
      s.last = Math.max(s.last, e.seq);
      s.count++;
      s.arrivals.push({ seq: e.seq, action: e.action, at: now, occurredAt: Date.parse(e.occurred_at) });
    }
  }

  const server = http.createServer((req, res) => {
    if (req.url.startsWith("/hang/")) return req.resume();
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      try {
        take(req.url, req.headers, Buffer.concat(chunks));
      } catch (e) {
        error(stateOf(req.url), `${req.url}: unreadable delivery: ${e.message}`);
      }
      res.writeHead(204).end();
      const { first, last, count, requests, repeats, errors } = stateOf(req.url);
      parentPort.postMessage({ kind: "progress", path: req.url, state: { first, last, count, requests, repeats, errors } });
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1", () => parentPort.postMessage({ kind: "listening", port: server.address().port }));
  parentPort.on("message", (m) => {
    if (m.kind === "arrivals") parentPort.postMessage({ kind: "arrivals", path: m.path, arrivals: stateOf(m.path).arrivals });
    if (m.kind === "close") {
      server.closeAllConnections();
      server.close(() => process.exit(0));
    }
  });
}

export async function startReceiver() {
  const worker = new Worker(new URL(import.meta.url));
  const states = new Map();
  const stateOf = (path) => states.get(path) ?? { first: null, last: 0, count: 0, requests: 0, repeats: 0, errors: [] };
  const listeners = new Set();
  worker.on("message", (m) => {
    if (m.kind === "progress") states.set(m.path, m.state);
    for (const l of listeners) l(m);
  });
  const next = (pick) =>
    new Promise((resolve) => {
      const l = (m) => pick(m) && (listeners.delete(l), resolve(m));
      listeners.add(l);
    });
  const { port } = await next((m) => m.kind === "listening");

  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    /** What arrived at path so far: first and last seq, count, requests, repeats, errors. */
    state: stateOf,
    /** Each event's first arrival at path: {seq, action, at, occurredAt} (ms since the epoch). */
    async arrivals(path) {
      const reply = next((m) => m.kind === "arrivals" && m.path === path);
      worker.postMessage({ kind: "arrivals", path });
      return (await reply).arrivals;
    },
    /**
     * Resolves when path has seqs after+1..n (the stream's delivered_seq when it started, and the
     * project's head); throws on a gap or disorder at once, or after timeoutMs.
     */
    waitForAll(path, n, { after = 0, timeoutMs = 600_000 } = {}) {
      const expected = n - after;
      return new Promise((resolve, reject) => {
        const check = () => {
          const s = stateOf(path);
          if (s.errors.length > 0) done(new Error(`stream delivery out of order or incomplete:\n  ${s.errors.join("\n  ")}`));
          else if (s.first !== null && s.first !== after + 1) done(new Error(`${path}: delivery began at seq ${s.first}, expected ${after + 1}`));
          else if (s.count >= expected) done(s.count === expected && s.last === n ? null : new Error(`${path}: ${s.count} events, seqs ${s.first}..${s.last}, expected ${after + 1}..${n}`));
        };
        const timer = setTimeout(() => done(new Error(`${path}: only ${stateOf(path).count} of ${expected} events after ${timeoutMs / 1000} s`)), timeoutMs);
        const done = (error) => {
          clearTimeout(timer);
          listeners.delete(check);
          error ? reject(error) : resolve(stateOf(path));
        };
        listeners.add(check);
        check();
      });
    },
    async close() {
      const exited = new Promise((resolve) => worker.once("exit", resolve));
      worker.postMessage({ kind: "close" });
      await exited;
    },
  };
}
