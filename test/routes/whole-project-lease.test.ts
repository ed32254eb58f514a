import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PROJECT_WALK_LIMIT } from "../../src/auth/project-walk";
import { COSTS } from "../../src/auth/rate-cost";
import { whenSettled } from "../../src/middleware/project-walk";
import { BASE, call, createProject, freshIp, ingestMany } from "../helpers";

/** 1000 events of ~7 KB each: a 7.6 MB export, far more than the runtime buffers ahead of a client that stops reading. */
async function largeProject() {
  const p = await createProject();
  const note = "x".repeat(7000);
  await ingestMany(p.key, Array.from({ length: 1000 }, (_, i) => ({ action: "report.generated", metadata: { note, i } })));
  return p;
}

/** An export whose client read the first bytes and then stops: the walk is held open for as long as the test wants. */
async function heldExport(key: string) {
  const res = await exports.default.fetch(new Request(`${BASE}/v1/exports?format=json`, { headers: { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "10.42.0.1" } }));
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const first = await reader.read();
  expect(first.done).toBe(false);
  return {
    reader,
    async readToEnd() {
      let bytes = first.value!.length;
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) bytes += chunk.value.length;
      return bytes;
    },
  };
}

function expectInFlight(res: Awaited<ReturnType<typeof call>>) {
  expect(res.status).toBe(429);
  expect(res.json.error).toMatchObject({ code: "RATE_LIMITED", details: { reason: "in_flight" } });
  const retry = Number(res.headers.get("Retry-After"));
  expect(retry).toBeGreaterThanOrEqual(1);
  expect(retry).toBeLessThanOrEqual(30);
  expect(res.json.error.details.retry_after).toBe(retry);
  // The RateLimit-* headers describe the project's budget, which the refusal did not spend.
  expect(res.headers.get("RateLimit-Limit")).toBe(String(PROJECT_WALK_LIMIT));
  expect(Number(res.headers.get("RateLimit-Remaining"))).toBeLessThanOrEqual(PROJECT_WALK_LIMIT - COSTS.export);
  expect(res.headers.get("RateLimit-Reset")).toMatch(/^\d+$/);
}

describe("one whole-project walk (verify or export) per project at a time", () => {
  it("refuses a verify or export while an export streams, not another project's; a new one runs once it is fully sent", async () => {
    const p = await largeProject();
    const other = await createProject();
    const held = await heldExport(p.key);
    expectInFlight(await call("GET", "/v1/events/verify", { key: p.key }));
    expectInFlight(await call("GET", "/v1/exports?format=csv", { key: p.key }));
    // Reads that do not walk the project, and another project's walks, go on.
    expect((await call("GET", "/v1/events?limit=1", { key: p.key })).status).toBe(200);
    expect((await call("GET", "/v1/events/verify", { key: other.key })).status).toBe(200);
    expect((await call("GET", "/v1/exports?format=json", { key: other.key })).status).toBe(200);
    expect(await held.readToEnd()).toBeGreaterThan(7_000_000);
    const after = await call("GET", "/v1/events/verify", { key: p.key });
    expect(after.status).toBe(200);
    expect(after.json.data).toMatchObject({ ok: true, verified: 1000 });
    // The verify returned its lease before answering: an export right after it runs.
    expect((await call("GET", "/v1/exports?format=csv", { key: p.key })).status).toBe(200);
  });

  it("runs one of two verifies sent at once and refuses the other", async () => {
    const p = await largeProject();
    const both = await Promise.all([call("GET", "/v1/events/verify", { key: p.key }), call("GET", "/v1/events/verify", { key: p.key })]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 429]);
    expectInFlight(both.find((r) => r.status === 429)!);
    expect(both.find((r) => r.status === 200)!.json.data).toMatchObject({ ok: true, verified: 1000 });
    expect((await call("GET", "/v1/events/verify", { key: p.key })).status).toBe(200);
  });

  it("releases the project when the client cancels an export mid-way", async () => {
    const p = await largeProject();
    const held = await heldExport(p.key);
    expectInFlight(await call("GET", "/v1/events/verify", { key: p.key }));
    await held.reader.cancel("client went away");
    // Well inside the lease's 60 s expiry: the cancellation itself released it.
    let res = await call("GET", "/v1/events/verify", { key: p.key });
    for (let tries = 0; res.status === 429 && tries < 20; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      res = await call("GET", "/v1/events/verify", { key: p.key });
    }
    expect(res.status).toBe(200);
    expect(res.json.data).toMatchObject({ ok: true, verified: 1000 });
  });

  it("ends the walk of a HEAD export, whose body the runtime drops unread", async () => {
    const p = await largeProject();
    const head = await exports.default.fetch(new Request(`${BASE}/v1/exports?format=csv`, { method: "HEAD", headers: { Authorization: `Bearer ${p.key}`, "CF-Connecting-IP": "10.42.0.2" } }));
    expect(head.status).toBe(200);
    expect(head.body).toBeNull();
    expect((await call("GET", "/v1/events/verify", { key: p.key })).status).toBe(200);
  });

  it("lets the lease of a holder that stopped renewing (a crashed isolate) expire", async () => {
    const p = await createProject();
    // A walk started as the worker starts one, by a holder that then vanished, with a short lease: long enough
    // that a loaded machine's next request still lands inside it (300 ms did not, once, in CI).
    const lease = 3000;
    const limiter = env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`project:${p.id}`));
    const grant = await limiter.startWalk(PROJECT_WALK_LIMIT, COSTS.verify, lease);
    // The lease runs from the limiter's clock when it granted it, which is before the answer came back, not before the
    // call went out: a loaded machine took more than the 50 ms margin between the two once, in CI.
    const granted = Date.now();
    expect(grant.token).not.toBeNull();
    expectInFlight(await call("GET", "/v1/events/verify", { key: p.key }));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, granted + lease + 50 - Date.now())));
    expect((await call("GET", "/v1/events/verify", { key: p.key })).status).toBe(200);
  });

  it("draws verifies and exports from a per-project budget that many IPs with one key cannot multiply", async () => {
    const p = await createProject();
    const walks = PROJECT_WALK_LIMIT / COSTS.verify;
    for (let i = 0; i < walks; i++) {
      // A fresh IP each time: every one of them is far within its own budget.
      const res = await call("GET", i % 2 ? "/v1/events/verify" : "/v1/exports?format=csv", { key: p.key, ip: freshIp() });
      expect(res.status).toBe(200);
      // Successes report the caller's per-IP budget, as for every other read.
      expect(res.headers.get("RateLimit-Remaining")).toBe("1480");
    }
    const late = freshIp();
    const refused = await call("GET", "/v1/events/verify", { key: p.key, ip: late });
    expect(refused.status).toBe(429);
    expect(refused.json.error).toMatchObject({ code: "RATE_LIMITED", details: { reason: "project_budget", limit: PROJECT_WALK_LIMIT, cost: COSTS.verify } });
    expect(refused.headers.get("RateLimit-Limit")).toBe(String(PROJECT_WALK_LIMIT));
    expect(refused.headers.get("RateLimit-Remaining")).toBe("0");
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get("Retry-After")).toBe(refused.headers.get("RateLimit-Reset"));
    expect((await call("GET", "/v1/exports?format=json", { key: p.key, ip: freshIp() })).status).toBe(429);
    // Other reads of the project, and other projects' walks, are not drawn from it.
    expect((await call("GET", "/v1/events", { key: p.key })).status).toBe(200);
    const other = await createProject();
    expect((await call("GET", "/v1/events/verify", { key: other.key, ip: late })).status).toBe(200);
  });
});

describe("whenSettled", () => {
  const source = (chunks: string[], fail?: Error) => {
    let i = 0;
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        if (i < chunks.length) controller.enqueue(new TextEncoder().encode(chunks[i++]));
        else if (fail) controller.error(fail);
        else controller.close();
      },
    });
  };

  it("settles once before the reader sees the end, an error or its own cancellation", async () => {
    for (const [name, body, finish] of [
      ["end", source(["a", "b"]), async (r: ReadableStreamDefaultReader<Uint8Array>) => expect((await r.read()).done).toBe(true)],
      ["error", source(["a", "b"], new Error("segment gone")), async (r: ReadableStreamDefaultReader<Uint8Array>) => await expect(r.read()).rejects.toThrow("segment gone")],
      ["cancel", source(["a", "b", "c"]), (r: ReadableStreamDefaultReader<Uint8Array>) => r.cancel()],
    ] as const) {
      let settled = 0;
      const reader = whenSettled(body, async () => void settled++).getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toBe("a");
      expect(new TextDecoder().decode((await reader.read()).value)).toBe("b");
      expect(settled, name).toBe(0);
      await finish(reader);
      expect(settled, name).toBe(1);
    }
  });
});
