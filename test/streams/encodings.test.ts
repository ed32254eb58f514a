/**
 * Stream encodings (issue 37): webhook ndjson, one event a line and signed as
 * the envelope is; s3 parquet, one Parquet file per batch of OCSF events, read
 * back here with hyparquet (an independent reader: the writer is
 * hyparquet-writer) from the same S3-compatible server as s3.test.ts.
 */
import { env } from "cloudflare:workers";
import { parquetMetadata, parquetReadObjects } from "hyparquet";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { setStreamPolicy } from "../../src/streams/transport";
import { call, createProject, ingestMany } from "../helpers";
import { check } from "../model/ocsf/checker";
import { createStream, events, Network, waitFor } from "./receiver";
import { listKeys, objectKey, reader, s3Settings, server } from "./s3-bucket";
import { verifyStandardWebhook } from "./standard-webhooks";

const HOST = "hooks.acme-lines.com";

async function streamCount(projectId: string): Promise<number> {
  return (await env.DB.prepare("SELECT count(*) AS n FROM streams WHERE project_id = ?").bind(projectId).first<{ n: number }>())!.n;
}

/** A row as read back, in OCSF's JSON terms: no nulls (OCSF leaves such attributes out), integers as numbers, unmapped parsed from its JSON text. */
function asOcsf(value: unknown, top = true): unknown {
  if (typeof value === "bigint") return Number(value);
  if (Array.isArray(value)) return value.map((v) => asOcsf(v, false));
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === null || v === undefined) continue;
    out[k] = top && k === "unmapped" ? JSON.parse(v as string) : asOcsf(v, false);
  }
  return out;
}

describe("webhook encoding ndjson", () => {
  let net: Network;
  let restore: () => void;
  beforeEach(() => {
    net = new Network();
    net.dns.set(HOST, ["93.184.216.34"]);
    restore = net.install();
  });
  afterEach(() => restore());

  it("posts one event a line, in seq order, signed per Standard Webhooks over the exact body; a retry is the same body and webhook-id", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: `https://${HOST}/lines`, encoding: "ndjson" });
    expect(s.encoding).toBe("ndjson");
    expect((await call("GET", `/v1/streams/${s.id}`, { key: p.key })).json.data.encoding).toBe("ndjson");

    // The first attempt fails: the batch is sent again whole.
    net.modes.set(HOST, 503);
    const stored = await ingestMany(p.key, events(4, (i) => ({ metadata: { i, text: "ünïcødé \n \"quoted\"" } })));
    await waitFor(p.key, s.id, (x) => x.consecutive_failures >= 1);
    net.modes.set(HOST, "ok");
    stored.push(...(await ingestMany(p.key, events(3))));
    await waitFor(p.key, s.id, (x) => x.delivered_seq === stored.at(-1).seq && x.status === "active");

    const got = net.at(HOST);
    const batches = new Map<string, string[]>();
    for (const r of got) {
      expect(r.headers.get("content-type")).toBe("application/x-ndjson");
      expect(await verifyStandardWebhook(s.secret, r.headers, r.body)).toBe(true);
      expect(await verifyStandardWebhook(s.secret, r.headers, r.body.replace("\n", "\n\n"))).toBe(false);
      expect(r.body.endsWith("\n")).toBe(true);
      const seqs = r.body.slice(0, -1).split("\n").map((l) => JSON.parse(l).seq as number);
      const id = r.headers.get("webhook-id")!;
      expect(id).toBe(`${s.id}:${seqs[0]}-${seqs.at(-1)}`);
      batches.set(id, [...(batches.get(id) ?? []), r.body]);
    }
    // Every attempt of a batch: the same body under the same webhook-id.
    const attempts = [...batches.values()];
    expect(attempts[0].length).toBeGreaterThanOrEqual(2);
    for (const bodies of attempts) expect(new Set(bodies).size).toBe(1);

    // Each event once, in seq order, as the API shows it, one line each.
    const lines = attempts.flatMap((bodies) => bodies[0].slice(0, -1).split("\n"));
    expect(lines.map((l) => JSON.parse(l))).toEqual(stored);
    for (const [i, l] of lines.entries()) expect(l).toBe(JSON.stringify(stored[i]));
  });

  it("with format ocsf, each line is a valid OCSF 1.3.0 event", async () => {
    const p = await createProject();
    expect((await call("PUT", "/v1/schemas/user.login", { key: p.key, body: { ocsf: { class_uid: 3002 } } })).status).toBe(201);
    const s = await createStream(p.key, { type: "webhook", url: `https://${HOST}/ocsf`, format: "ocsf", encoding: "ndjson" });
    expect(s).toMatchObject({ format: "ocsf", encoding: "ndjson" });
    const stored = await ingestMany(p.key, [
      { action: "user.login", actor: { id: "u_1", type: "user" } },
      { action: "report.viewed", actor: { id: "u_2", type: "user" }, targets: [{ type: "report", id: "r_1" }] },
      { action: "user.login", actor: { id: "u_3", type: "admin" } },
    ]);
    await waitFor(p.key, s.id, (x) => x.delivered_seq === stored.at(-1).seq);
    const got = net.at(HOST);
    for (const r of got) {
      expect(r.headers.get("content-type")).toBe("application/x-ndjson");
      expect(await verifyStandardWebhook(s.secret, r.headers, r.body)).toBe(true);
    }
    const sent = got.flatMap((r) => r.body.slice(0, -1).split("\n")).map((l) => JSON.parse(l));
    expect(sent.map((e) => [e.class_uid, e.metadata.sequence, e.metadata.uid])).toEqual([
      [3002, stored[0].seq, stored[0].id],
      [6003, stored[1].seq, stored[1].id],
      [3002, stored[2].seq, stored[2].id],
    ]);
    for (const e of sent) expect(check(e), JSON.stringify(e)).toEqual([]);
  });
});

describe("s3 encoding parquet", () => {
  let puts: { url: string; status: number; body: string }[];
  let loseFirst: boolean;
  /** The prefix (bucket-relative) whose PUTs the test watches: the policy sees every stream of the runtime, and files share runtimes. */
  let watching: string;
  let restore: () => void;
  let privateTargets: string;
  beforeEach(() => {
    puts = [];
    loseFirst = false;
    watching = "";
    privateTargets = env.ALLOW_PRIVATE_STREAM_TARGETS;
    env.ALLOW_PRIVATE_STREAM_TARGETS = "true";
    restore = setStreamPolicy({
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        const url = new Request(input, init).url;
        if (init?.method === "PUT" && watching && objectKey(url).startsWith(watching)) {
          const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", init.body as Uint8Array<ArrayBuffer>));
          const body = [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
          // The first object is written but its answer lost: the sender cannot tell, and writes it again.
          if (res.ok && loseFirst && puts.length === 0) {
            await res.body?.cancel();
            puts.push({ url, status: 503, body });
            return new Response("answer lost on the way", { status: 503 });
          }
          puts.push({ url, status: res.status, body });
        }
        return res;
      },
      baseBackoffMs: 20,
      maxBackoffMs: 200,
    });
  });
  afterEach(() => {
    restore();
    env.ALLOW_PRIVATE_STREAM_TARGETS = privateTargets;
  });

  it("writes each batch as one Parquet file of OCSF columns under its date partition, rows in seq order, every event whole", async () => {
    const p = await createProject();
    const put = (action: string, body: unknown) => call("PUT", `/v1/schemas/${action}`, { key: p.key, body });
    expect((await put("user.login", { ocsf: { class_uid: 3002 } })).status).toBe(201);
    expect((await put("member.role.changed", { ocsf: { class_uid: 3001 } })).status).toBe(201);
    expect((await put("page.viewed", { ocsf: { class_uid: 6001 }, display: "{actor.id} viewed {targets.page.name}" })).status).toBe(201);
    const res = await call("POST", "/v1/streams", {
      key: p.key,
      body: { type: "s3", format: "ocsf", encoding: "parquet", s3: s3Settings("lake-pq/", { partition: "date" }) },
    });
    expect(res.status, res.text).toBe(201);
    const s = res.json.data;
    expect(s).toMatchObject({ format: "ocsf", encoding: "parquet", s3: { partition: "date" } });

    watching = `lake-pq/${p.id}/`;
    loseFirst = true;
    const day = (d: number, h: number) => new Date(Date.UTC(2026, 4, d, h)).toISOString();
    // Every class and every attribute the OCSF mapping writes, between them.
    const first = [
      { action: "user.login", occurred_at: day(3, 9), actor: { id: "u_1", type: "user", name: "Ada", email: "ada@example.com" }, organization: "org_1" },
      { action: "document.shared", occurred_at: day(3, 10), actor: { id: "u_2", type: "admin" }, targets: [{ type: "document", id: "d_1", name: "Plan" }, { type: "folder", id: "f_1" }], metadata: { via: "link", n: 2, deep: { list: [1, "two", null] } } },
      { action: "member.role.changed", occurred_at: day(3, 11), actor: { id: "u_1", type: "user" }, targets: [{ type: "user", id: "u_9", name: "Bo" }], changes: [{ field: "role", before: "viewer", after: "admin" }, { field: "groups", before: ["a"], after: ["a", "b"] }] },
      { action: "page.viewed", occurred_at: day(3, 12), actor: { id: "u_3", type: "robot" }, targets: [{ type: "page", id: "pg_1", name: "Home" }] },
      { action: "job.ran", occurred_at: day(3, 13), metadata: { outcome: "failure" } },
    ];
    const stored = await ingestMany(p.key, first, { ip: "203.0.113.7", headers: { "User-Agent": "acme-agent/1.0" } });
    await waitFor(p.key, s.id, (x) => x.delivered_seq === stored.at(-1).seq);
    stored.push(...(await ingestMany(p.key, events(3, (i) => ({ occurred_at: day(4, 8 + i) })))));
    await waitFor(p.key, s.id, (x) => x.delivered_seq === stored.at(-1).seq);

    // Keyed as the NDJSON objects are, with .parquet; one object per day's batch here.
    const keys = await listKeys(`lake-pq/${p.id}/`);
    expect(keys.map((k) => k.split("/")[2])).toEqual(["dt=2026-05-03", "dt=2026-05-04"]);
    for (const k of keys) expect(k).toMatch(new RegExp(`^lake-pq/${p.id}/dt=2026-05-0[34]/\\d{16}-\\d{16}\\.parquet$`));
    const ranges = keys.map((k) => k.slice(-33, -8).split("-").map(Number));
    expect(ranges).toEqual([
      [s.delivered_seq + 1, stored[first.length - 1].seq],
      [stored[first.length].seq, stored.at(-1).seq],
    ]);
    // The lost answer: the same key written again, with the same bytes.
    expect(puts[0].status).toBe(503);
    const again = puts.filter((x) => x.url === puts[0].url);
    expect(again.map((x) => x.status)).toEqual([503, 200]);
    expect(again[1].body).toBe(again[0].body);

    const rows: Record<string, any>[] = [];
    for (const key of keys) {
      const obj = await reader.fetch(`${server.endpoint}/${server.bucket}/${key}`);
      expect(obj.status).toBe(200);
      expect(obj.headers.get("content-type")).toBe("application/vnd.apache.parquet");
      const file = await obj.arrayBuffer();
      const meta = parquetMetadata(file);
      expect(meta.row_groups).toHaveLength(1);
      const columns = Object.fromEntries(meta.schema.map((el) => [el.name, el]));
      expect(columns.class_uid).toMatchObject({ type: "INT32" });
      expect(columns.time).toMatchObject({ type: "INT64" });
      expect(columns.message).toMatchObject({ type: "BYTE_ARRAY", converted_type: "UTF8" });
      expect(columns.actor.num_children).toBe(2);
      rows.push(...(await parquetReadObjects({ file })));
    }
    // One row per event, in seq order; the typed columns hold the event's values.
    expect(rows).toHaveLength(stored.length);
    expect(rows.map((r) => r.metadata.sequence)).toEqual(stored.map((e) => BigInt(e.seq)));
    expect(rows.map((r) => r.metadata.uid)).toEqual(stored.map((e) => e.id));
    expect(rows.map((r) => r.class_uid)).toEqual([3002, 6003, 3001, 6001, 6003, 3002, 3002, 3002]);
    expect(rows.map((r) => r.time)).toEqual(stored.map((e) => BigInt(Date.parse(e.occurred_at))));
    expect(rows[0].user.uid).toBe("u_1");
    expect(rows[1].actor.user.uid).toBe("u_2");
    expect(rows[1].resources.map((r: any) => r.uid)).toEqual(["d_1", "f_1"]);
    expect(JSON.parse(rows[1].unmapped).metadata).toEqual(first[1].metadata);
    expect(rows[4]).toMatchObject({ status_id: 2, actor: { app_uid: p.id } });

    // Whole: every row, read back, is the OCSF event the feed writes for it.
    const feed = await call("GET", "/v1/events/feed?format=ocsf&limit=100", { key: p.key });
    expect(feed.status).toBe(200);
    const byUid = new Map((feed.json.data as any[]).map((e) => [e.metadata.uid, e]));
    for (const [i, row] of rows.entries()) {
      const expected = byUid.get(stored[i].id);
      expect(check(expected)).toEqual([]);
      expect(asOcsf(row), stored[i].action).toEqual(expected);
    }
  });
});

describe("encoding", () => {
  it("shows each stream's encoding, its type's default when none was sent", async () => {
    const p = await createProject();
    const net = new Network();
    net.dns.set(HOST, ["93.184.216.34"]);
    const restore = net.install();
    const privateTargets = env.ALLOW_PRIVATE_STREAM_TARGETS;
    env.ALLOW_PRIVATE_STREAM_TARGETS = "true";
    try {
      const webhook = await createStream(p.key, { type: "webhook", url: `https://${HOST}/a` });
      const s3 = await createStream(p.key, { type: "s3", s3: s3Settings("defaults/") });
      const splunk = await createStream(p.key, { type: "splunk", url: `https://${HOST}/b`, token: "hec-token" });
      const json = await createStream(p.key, { type: "webhook", url: `https://${HOST}/c`, encoding: "json" });
      expect([webhook, s3, splunk, json].map((s) => s.encoding)).toEqual(["json", "ndjson", null, "json"]);
      const list = await call("GET", "/v1/streams", { key: p.key });
      expect(list.json.data.map((s: any) => s.encoding)).toEqual(["json", "ndjson", null, "json"]);
      // Stopped here, or they would retry the chain's own events at a host that is gone once the network is.
      for (const s of [webhook, s3, splunk, json]) expect((await call("DELETE", `/v1/streams/${s.id}`, { key: p.key })).status).toBe(204);
    } finally {
      restore();
      env.ALLOW_PRIVATE_STREAM_TARGETS = privateTargets;
    }
  });

  it("refuses an encoding its type does not take, parquet without ocsf, and unknown values, with a 400 naming encoding; nothing is stored", async () => {
    const p = await createProject();
    const hook = { type: "webhook", url: "https://hooks.acme-receiver.com/" };
    const s3 = { type: "s3", s3: s3Settings("bad/") };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ ...s3, encoding: "parquet" }, /needs format ocsf/],
      [{ ...s3, format: "json", encoding: "parquet" }, /needs format ocsf/],
      [{ ...s3, format: "ocsf", encoding: "json" }, /ndjson or parquet/],
      [{ ...hook, encoding: "parquet" }, /json or ndjson/],
      [{ type: "splunk", url: "https://hooks.acme-receiver.com/", token: "hec", encoding: "ndjson" }, /send no encoding/],
      [{ type: "datadog", url: "https://hooks.acme-receiver.com/", token: "dd", encoding: "json" }, /send no encoding/],
      [{ ...hook, encoding: "csv" }, /json, ndjson or parquet/],
      [{ ...hook, encoding: 1 }, /json, ndjson or parquet/],
      [{ ...hook, encoding: null }, /json, ndjson or parquet/],
    ];
    for (const [body, message] of cases) {
      const res = await call("POST", "/v1/streams", { key: p.key, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
      expect(res.json.error.details.issues, JSON.stringify(body)).toEqual([{ path: "encoding", message: expect.stringMatching(message) }]);
    }
    expect(await streamCount(p.id)).toBe(0);
  });
});
