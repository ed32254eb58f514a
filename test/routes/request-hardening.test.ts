import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_BODY_BYTES } from "../../src/lib/request-body";
import { BASE, call, createProject, dbOf, ingest } from "../helpers";

async function count(projectId: string) {
  const row = await (await dbOf(projectId)).prepare("SELECT COUNT(*) AS n FROM events WHERE project_id = ?").bind(projectId).first<{ n: number }>();
  return row!.n;
}

/** A body that counts what the server pulls from it: `chunks` chunks of `size` bytes (endless when chunks is Infinity). */
function countingBody(chunk: Uint8Array, chunks = Infinity) {
  const seen = { bytes: 0, pulls: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (seen.pulls >= chunks) return controller.close();
      seen.pulls++;
      seen.bytes += chunk.byteLength;
      controller.enqueue(chunk);
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { stream, seen };
}

async function send(path: string, key: string, body: BodyInit, headers: Record<string, string> = {}) {
  const res = await exports.default.fetch(
    new Request(`${BASE}${path}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", "CF-Connecting-IP": "10.9.0.1", ...headers },
      body,
      // @ts-expect-error workerd takes a streamed request body without the duplex flag browsers need
      duplex: "half",
    }),
  );
  return { status: res.status, json: (await res.json()) as any };
}

describe("request body cap", () => {
  it("refuses a declared Content-Length over the cap before reading anything", async () => {
    const p = await createProject();
    const { stream, seen } = countingBody(new Uint8Array(64 * 1024).fill(0x20));
    const res = await send("/v1/events", p.key, stream, { "Content-Length": String(MAX_BODY_BYTES + 1) });
    expect(res.status).toBe(413);
    expect(res.json.error.code).toBe("EVENT_TOO_LARGE");
    expect(res.json.error.details).toEqual({ field: "body", size: MAX_BODY_BYTES + 1, limit: MAX_BODY_BYTES });
    // The endless body was not read (the runtime's pipe into the worker pulls a chunk or two ahead;
    // a read up to the cap, as for the chunked body below, would have pulled 2 MiB).
    expect(seen.bytes).toBeLessThanOrEqual(4 * 64 * 1024);
    expect(await count(p.id)).toBe(0);
  });

  it("refuses a whole body over the cap with its size", async () => {
    const p = await createProject();
    const big = JSON.stringify({ action: "a", metadata: { pad: "x".repeat(MAX_BODY_BYTES) } });
    const res = await call("POST", "/v1/events", { key: p.key, body: big });
    expect(res.status).toBe(413);
    expect(res.json.error.details.field).toBe("body");
    expect(res.json.error.details.limit).toBe(MAX_BODY_BYTES);
    expect(res.json.error.details.size).toBeGreaterThan(MAX_BODY_BYTES);
    expect(await count(p.id)).toBe(0);
  });

  it("takes a body of exactly the cap and refuses one byte more", async () => {
    const p = await createProject();
    const event = JSON.stringify({ action: "at.the.cap" });
    const exact = event + " ".repeat(MAX_BODY_BYTES - event.length); // JSON allows trailing whitespace
    expect((await call("POST", "/v1/events", { key: p.key, body: exact })).status).toBe(201);
    const over = await call("POST", "/v1/events", { key: p.key, body: `${exact} ` });
    expect(over.status).toBe(413);
    expect(over.json.error.details).toEqual({ field: "body", size: MAX_BODY_BYTES + 1, limit: MAX_BODY_BYTES });
    expect(await count(p.id)).toBe(1);
  });

  it("stops reading a chunked body (no Content-Length) at the cap and cancels it", async () => {
    const p = await createProject();
    const chunk = new Uint8Array(64 * 1024).fill(0x20); // spaces: valid JSON whitespace, forever
    const { stream, seen } = countingBody(chunk);
    const res = await send("/v1/events/batch", p.key, stream);
    expect(res.status).toBe(413);
    expect(res.json.error.code).toBe("EVENT_TOO_LARGE");
    expect(res.json.error.details.field).toBe("body");
    expect(res.json.error.details.limit).toBe(MAX_BODY_BYTES);
    expect(res.json.error.details.size).toBeGreaterThan(MAX_BODY_BYTES);
    // The endless body was read to just past the cap (a few chunks of read-ahead at most), then cancelled.
    expect(seen.bytes).toBeLessThan(MAX_BODY_BYTES + 4 * chunk.byteLength);
    expect(seen.cancelled).toBe(true);
    expect(await count(p.id)).toBe(0);
  });

  it("reads a small chunked body in full", async () => {
    const p = await createProject();
    const text = new TextEncoder().encode(JSON.stringify({ action: "chunked.body", metadata: { n: 1 } }));
    const parts = [text.slice(0, 5), text.slice(5, 11), text.slice(11)];
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = parts.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    });
    const res = await send("/v1/events", p.key, stream);
    expect(res.status).toBe(201);
    expect(res.json.data.action).toBe("chunked.body");
    expect(await count(p.id)).toBe(1);
  });

  it("caps the embed token body too, even without a Content-Type", async () => {
    const p = await createProject();
    const { stream, seen } = countingBody(new Uint8Array(64 * 1024).fill(0x20));
    const res = await exports.default.fetch(
      new Request(`${BASE}/v1/embed/token`, {
        method: "POST",
        headers: { Authorization: `Bearer ${p.key}`, "CF-Connecting-IP": "10.9.0.2" },
        body: stream,
        // @ts-expect-error see above
        duplex: "half",
      }),
    );
    expect(res.status).toBe(413);
    expect(((await res.json()) as any).error.details.field).toBe("body");
    expect(seen.bytes).toBeLessThan(MAX_BODY_BYTES + 4 * 64 * 1024);
  });
});

describe("invalid UTF-8", () => {
  const bytes = (...parts: (string | number[])[]) => {
    const out: number[] = [];
    for (const part of parts) out.push(...(typeof part === "string" ? new TextEncoder().encode(part) : part));
    return new Uint8Array(out);
  };

  it.each([
    ["a stray continuation byte", [0x80]],
    ["an invalid byte", [0xff]],
    ["a truncated sequence", [0xe2, 0x82]],
    ["an overlong encoding of '/'", [0xc0, 0xaf]],
    ["an encoded UTF-16 surrogate", [0xed, 0xa0, 0x80]],
  ])("refuses %s with 400 and stores nothing", async (_name, bad) => {
    const p = await createProject();
    const body = bytes('{"action":"a', bad, '"}');
    const res = await send("/v1/events", p.key, body);
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe("VALIDATION_ERROR");
    expect(res.json.error.details.issues).toEqual([{ path: "", message: "The body is not valid UTF-8" }]);
    expect(await count(p.id)).toBe(0);
  });

  it("refuses it in a batch, in metadata", async () => {
    const p = await createProject();
    const body = bytes('{"events":[{"action":"ok"},{"action":"b","metadata":{"k":"', [0xfe], '"}}]}');
    const res = await send("/v1/events/batch", p.key, body);
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe("VALIDATION_ERROR");
    expect(await count(p.id)).toBe(0);
  });

  it("refuses it on the other JSON bodies (retention, embed token)", async () => {
    const p = await createProject();
    const retention = await exports.default.fetch(
      new Request(`${BASE}/v1/retention`, {
        method: "PUT",
        headers: { Authorization: `Bearer ${p.key}`, "Content-Type": "application/json", "CF-Connecting-IP": "10.9.0.3" },
        body: bytes('{"rules":[{"pattern":"a', [0xff], '","days":1}]}'),
      }),
    );
    expect(retention.status).toBe(400);
    const embed = await send("/v1/embed/token", p.key, bytes('{"organization":"o', [0xc3], '"}'));
    expect(embed.status).toBe(400);
    expect(embed.json.error.code).toBe("VALIDATION_ERROR");
  });

  it("stores valid multi-byte text exactly as sent", async () => {
    const p = await createProject();
    const res = await send("/v1/events", p.key, bytes('{"action":"caf\u00e9.\u{1F600}","actor":{"id":"Jos\u00e9"}}'));
    expect(res.status).toBe(201);
    expect(res.json.data.action).toBe("caf\u00e9.\u{1F600}");
    expect(res.json.data.actor.id).toBe("Jos\u00e9");
  });
});

describe("occurred_at in the future", () => {
  const at = (ms: number) => new Date(Date.now() + ms).toISOString();

  it.each([
    ["ten minutes ahead", () => at(10 * 60_000)],
    ["the end of time", () => "9999-12-31T23:59:59Z"],
    ["an hour ahead, written with an offset", () => new Date(Date.now() + 3600_000).toISOString().replace("Z", "+00:00")],
  ])("refuses %s with 400 on occurred_at", async (_name, value) => {
    const p = await createProject();
    const res = await ingest(p.key, { action: "a", occurred_at: value() });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe("VALIDATION_ERROR");
    expect(res.json.error.details.issues).toEqual([
      { path: "occurred_at", message: "occurred_at must not be more than 5 minutes in the future" },
    ]);
    expect(await count(p.id)).toBe(0);
  });

  it("accepts up to five minutes of client clock skew", async () => {
    const p = await createProject();
    const value = at(4 * 60_000);
    const res = await ingest(p.key, { action: "a", occurred_at: value });
    expect(res.status).toBe(201);
    expect(res.json.data.occurred_at).toBe(value);
  });

  it("refuses a batch with one future event as a whole", async () => {
    const p = await createProject();
    const res = await call("POST", "/v1/events/batch", {
      key: p.key,
      body: { events: [{ action: "a" }, { action: "b", occurred_at: at(3600_000) }] },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.details.issues[0].path).toBe("events.1.occurred_at");
    expect(await count(p.id)).toBe(0);
  });
});
