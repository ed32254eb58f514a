/**
 * The s3 destination against a real S3-compatible server: s3rver, started by
 * vitest's globalSetup on the Node side (s3-server.mjs) behind a SigV4 check
 * written from AWS's spec. The delivery objects run here, in workerd, and
 * reach it over the loopback (ALLOW_PRIVATE_STREAM_TARGETS, as in npm run dev).
 */
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { setStreamPolicy } from "../../src/streams/transport";
import { call, createProject, ingestMany } from "../helpers";
import { createStream, events, waitFor } from "./receiver";
import { listKeys, objectKey, reader, s3Settings, server } from "./s3-bucket";

/** The stream's s3 settings, writing under audit/ unless overridden. */
function settings(overrides: Record<string, unknown> = {}) {
  return s3Settings("audit/", overrides);
}

/** An object's lines, gunzipped (the object is stored and served as the .gz file it is). */
async function objectLines(key: string): Promise<string[]> {
  const res = await reader.fetch(`${server.endpoint}/${server.bucket}/${key}`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/gzip");
  const text = await new Response(res.body!.pipeThrough(new DecompressionStream("gzip"))).text();
  expect(text.endsWith("\n")).toBe(true);
  return text.slice(0, -1).split("\n");
}

let attempts: { method: string; url: string; status: number }[];
/** Object keys whose first PUT is written but answered 503: the sender cannot tell it arrived. */
let loseAnswer: (url: string) => boolean;
let restore: () => void;
let privateTargets: string;
beforeEach(() => {
  attempts = [];
  loseAnswer = () => false;
  privateTargets = env.ALLOW_PRIVATE_STREAM_TARGETS;
  env.ALLOW_PRIVATE_STREAM_TARGETS = "true";
  restore = setStreamPolicy({
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      const url = new Request(input, init).url;
      if (res.ok && loseAnswer(url)) {
        await res.body?.cancel();
        attempts.push({ method: init?.method ?? "GET", url, status: 503 });
        return new Response("answer lost on the way", { status: 503 });
      }
      attempts.push({ method: init?.method ?? "GET", url, status: res.status });
      return res;
    },
    baseBackoffMs: 20,
    maxBackoffMs: 200,
  });
});
/**
 * The PUTs of one project's objects. The policy sees every stream of the runtime, and files share
 * runtimes (test/vitest.config.ts): another file's stream, retrying late, once put an object during
 * a test here.
 */
const putsUnder = (prefix: string) => attempts.filter((a) => a.method === "PUT" && objectKey(a.url).startsWith(prefix));

afterEach(() => {
  restore();
  env.ALLOW_PRIVATE_STREAM_TARGETS = privateTargets;
});

describe("s3 streams", () => {
  it("writes each batch as one gzip NDJSON object, keys sorting in delivery order; a retried batch overwrites its own key", async () => {
    const p = await createProject();
    const res = await call("POST", "/v1/streams", { key: p.key, body: { type: "s3", s3: settings() } });
    expect(res.status).toBe(201);
    const s = res.json.data;
    const shown = { endpoint: server.endpoint, bucket: server.bucket, region: server.region, prefix: "audit/", access_key_id: server.accessKeyId, partition: "none" };
    expect(s).toMatchObject({ type: "s3", url: `${server.endpoint}/${server.bucket}/audit/`, s3: shown, status: "active" });
    const one = await call("GET", `/v1/streams/${s.id}`, { key: p.key });
    expect(one.json.data.s3).toEqual(shown);
    for (const text of [res.text, one.text, (await call("GET", "/v1/streams", { key: p.key })).text]) expect(text).not.toContain(server.secretAccessKey);

    // The first object's answer is lost: the batch is sent again, to the same key.
    let lost = "";
    loseAnswer = (url) => (lost === "" ? ((lost = url), true) : false);
    const stored: any[] = [];
    // Three deliveries, across seq 9 to 10: unpadded, "10-…" would sort before "7-…".
    for (const n of [5, 3, 4]) {
      stored.push(...(await ingestMany(p.key, events(n, (i) => ({ metadata: { i, text: "ünïcødé \n \"quoted\"" } })))));
      await waitFor(p.key, s.id, (x) => x.delivered_seq === stored.at(-1).seq);
    }
    const status = await waitFor(p.key, s.id, () => true);
    expect(status).toMatchObject({ status: "active", consecutive_failures: 0, last_error: "HTTP 503: answer lost on the way" });

    const keys = await listKeys(`audit/${p.id}/`);
    const puts = putsUnder(`audit/${p.id}/`);
    const written = [...new Set(puts.map((a) => objectKey(a.url)))];
    // Listed in key order = the order they were written in; nothing written twice but the retried key.
    expect(keys).toEqual(written);
    expect(keys.length).toBeGreaterThanOrEqual(3);
    expect(puts.length).toBe(keys.length + 1);
    expect(puts.filter((a) => a.url === lost).map((a) => a.status)).toEqual([503, 200]);
    for (const k of keys) expect(k).toMatch(new RegExp(`^audit/${p.id}/\\d{16}-\\d{16}\\.ndjson\\.gz$`));
    // The key names the seqs the object covers; unfiltered, they tile the log after the stream's creation record.
    const ranges = keys.map((k) => k.slice(-34, -10).split("-").map(Number));
    expect(ranges[0][0]).toBe(s.delivered_seq + 1);
    for (let i = 1; i < ranges.length; i++) expect(ranges[i][0]).toBe(ranges[i - 1][1] + 1);
    expect(ranges.at(-1)![1]).toBe(stored.at(-1).seq);

    // Every line is one event's JSON, in seq order, each exactly once.
    const lines = (await Promise.all(keys.map(objectLines))).flat();
    expect(lines.map((l) => JSON.parse(l))).toEqual(stored);
    for (const [i, l] of lines.entries()) expect(l).toBe(JSON.stringify(stored[i]));

    // Settings sealed under a STREAM_SECRETS_KEY since changed: the stream is still shown, without them.
    await env.DB.prepare("UPDATE streams SET credential = ? WHERE id = ?").bind("v1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA==", s.id).run();
    const unreadable = await call("GET", `/v1/streams/${s.id}`, { key: p.key });
    expect(unreadable.status).toBe(200);
    expect(unreadable.json.data.s3).toEqual({ ...shown, region: null, access_key_id: null });
  });

  it("with partition date, writes each batch under dt=<the day its first event occurred>; with format ocsf, OCSF lines", async () => {
    const p = await createProject();
    const res = await call("POST", "/v1/streams", { key: p.key, body: { type: "s3", format: "ocsf", s3: settings({ prefix: "lake/", partition: "date" }) } });
    expect(res.status, res.text).toBe(201);
    const s = res.json.data;
    expect(s.s3.partition).toBe("date");
    const day = (d: number) => new Date(Date.UTC(2026, 4, d, 12)).toISOString();
    const stored: any[] = [];
    for (const d of [3, 4]) {
      stored.push(...(await ingestMany(p.key, events(2, () => ({ occurred_at: day(d) })))));
      await waitFor(p.key, s.id, (x) => x.delivered_seq === stored.at(-1).seq);
    }
    const keys = await listKeys(`lake/${p.id}/`);
    expect(keys.map((k) => k.split("/")[2])).toEqual(["dt=2026-05-03", "dt=2026-05-04"]);
    for (const k of keys) expect(k).toMatch(new RegExp(`^lake/${p.id}/dt=2026-05-0[34]/\\d{16}-\\d{16}\\.ndjson\\.gz$`));
    const lines = (await Promise.all(keys.map(objectLines))).flat().map((l) => JSON.parse(l));
    expect(lines.map((e) => [e.class_uid, e.metadata.uid])).toEqual(stored.map((e) => [6003, e.id]));
  });

  it("a wrong secret key is refused by the server's signature check: the stream's last error, retried, nothing written", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "s3", s3: settings({ prefix: "wrong/", secret_access_key: `${server.secretAccessKey.slice(0, -1)}X` }) });
    await ingestMany(p.key, events(3));
    const failing = await waitFor(p.key, s.id, (x) => x.status === "failing" && x.consecutive_failures >= 2);
    expect(failing.delivered_seq).toBe(s.delivered_seq);
    expect(failing.lag_events).toBe(3);
    expect(failing.next_attempt_at).not.toBeNull();
    expect(failing.last_error).toMatch(/^HTTP 403: SignatureDoesNotMatch: The request signature we calculated does not match/);
    const puts = putsUnder(`wrong/${p.id}/`);
    expect(puts.length).toBeGreaterThanOrEqual(2);
    expect(puts.every((a) => a.status === 403)).toBe(true);
    expect(await listKeys(`wrong/${p.id}/`)).toEqual([]);
    expect((await call("DELETE", `/v1/streams/${s.id}`, { key: p.key })).status).toBe(204);
  });

  it("refuses bad settings with a 400 naming the field", async () => {
    const p = await createProject();
    const cases: [unknown, string][] = [
      [{ type: "s3" }, "s3"],
      [{ type: "s3", url: `${server.endpoint}/x`, s3: settings() }, "url"],
      [{ type: "s3", token: "t", s3: settings() }, "token"],
      [{ type: "webhook", url: "https://hooks.acme-receiver.com/", s3: settings() }, "s3"],
      [{ type: "s3", s3: settings({ endpoint: `${server.endpoint}/bucket` }) }, "s3.endpoint"],
      [{ type: "s3", s3: settings({ endpoint: "not a url" }) }, "s3.endpoint"],
      [{ type: "s3", s3: settings({ endpoint: "ftp://storage.example.com" }) }, "s3.endpoint"],
      [{ type: "s3", s3: settings({ bucket: "Bad_Bucket" }) }, "s3.bucket"],
      [{ type: "s3", s3: settings({ region: "US East" }) }, "s3.region"],
      [{ type: "s3", s3: settings({ prefix: "/abs/" }) }, "s3.prefix"],
      [{ type: "s3", s3: settings({ prefix: "a/../b/" }) }, "s3.prefix"],
      [{ type: "s3", s3: settings({ prefix: "with space/" }) }, "s3.prefix"],
      [{ type: "s3", s3: settings({ access_key_id: "" }) }, "s3.access_key_id"],
      [{ type: "s3", s3: settings({ secret_access_key: undefined }) }, "s3.secret_access_key"],
      [{ type: "s3", s3: settings({ secret_access_key: "has space" }) }, "s3.secret_access_key"],
    ];
    for (const [body, path] of cases) {
      const res = await call("POST", "/v1/streams", { key: p.key, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
      expect(res.json.error.details.issues[0].path, JSON.stringify(body)).toBe(path);
      expect(res.json.error.message.startsWith(`${path}: `)).toBe(true);
      expect(res.text).not.toContain(server.secretAccessKey);
    }
    // The endpoint's host passes the same rules as a url: https and public unless the deployment allows local targets, and STREAM_DESTINATIONS.
    env.ALLOW_PRIVATE_STREAM_TARGETS = "";
    const local = await call("POST", "/v1/streams", { key: p.key, body: { type: "s3", s3: settings() } });
    expect(local.json.error.details.issues[0]).toEqual({ path: "s3.endpoint", message: "endpoint must be https://" });
    env.ALLOW_PRIVATE_STREAM_TARGETS = "true";
    const destinations = env.STREAM_DESTINATIONS;
    env.STREAM_DESTINATIONS = "storage.example.com";
    try {
      const refused = await call("POST", "/v1/streams", { key: p.key, body: { type: "s3", s3: settings() } });
      expect(refused.json.error.details.issues[0]).toMatchObject({ path: "s3.endpoint", message: expect.stringContaining("STREAM_DESTINATIONS") });
    } finally {
      env.STREAM_DESTINATIONS = destinations;
    }
    expect((await env.DB.prepare("SELECT count(*) AS n FROM streams WHERE project_id = ?").bind(p.id).first<{ n: number }>())!.n).toBe(0);
  });
});
