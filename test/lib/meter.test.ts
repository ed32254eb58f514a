import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { asInvocation, LimitExceededError, LIMITS, meterReport, resetMeterReport } from "../../src/lib/meter";
import { exportTuning } from "../../src/reads/export-stream";
import { meterEnv } from "../../src/lib/metered-bindings";
import { call, createProject, ingestMany, warmKey } from "../helpers";

/** A bucket and a namespace that answer at once: only what the meter counts matters here. */
const fakeBucket = { head: async () => null, createMultipartUpload: async () => null };
const fakeNamespace = { idFromName: (name: string) => name, get: () => ({ ping: async () => "pong" }) };

describe("the invocation meter (Cloudflare's per-invocation limits, enforced where wrangler dev does not)", () => {
  it("fails the invocation whose D1 query passes 1,000, as production does", async () => {
    const metered = meterEnv({ DB: env.DB });
    const statement = metered.DB.prepare("SELECT 1 AS one");
    let done = 0;
    const run = asInvocation("test many-queries", async () => {
      for (let i = 0; i < LIMITS.d1Queries + 5; i++) {
        await statement.first();
        done++;
      }
    });
    await expect(run).rejects.toThrow(LimitExceededError);
    await expect(run).rejects.toThrow(/1,000 D1 queries/);
    expect(done).toBe(LIMITS.d1Queries);
    // A new invocation has a new budget, and a batch counts each of its statements.
    await asInvocation("test batch", async () => {
      await metered.DB.batch(Array.from({ length: 600 }, () => metered.DB.prepare("SELECT ?").bind(1)));
      await expect(metered.DB.batch(Array.from({ length: 401 }, () => metered.DB.prepare("SELECT 2")))).rejects.toThrow(LimitExceededError);
    });
  }, 30_000);

  it("counts R2 operations and Durable Object calls as subrequests, up to 10,000", async () => {
    const metered = meterEnv({ BUCKET: fakeBucket as unknown as R2Bucket, NS: fakeNamespace as unknown as DurableObjectNamespace });
    await expect(
      asInvocation("test subrequests", async () => {
        for (let i = 0; i < 5_000; i++) await metered.BUCKET.head("k");
        const stub = metered.NS.get(metered.NS.idFromName("x")) as unknown as { ping(): Promise<string> };
        for (let i = 0; i < 5_000; i++) await stub.ping();
        await stub.ping();
      }),
    ).rejects.toThrow(/10,000 subrequests/);
    expect(meterReport().find((r) => r.invocation === "test subrequests")).toEqual({ invocation: "test subrequests", d1Queries: 0, subrequests: 10_001, rowsRead: 0, rowsWritten: 0 });
  });

  it("is on in every test: each request is one invocation, reported under its route", async () => {
    const p = await createProject();
    expect((await call("GET", "/v1/events", { key: p.key })).status).toBe(200);
    const list = meterReport().find((r) => r.invocation === "GET /v1/events");
    expect(list).toBeDefined();
    expect(list!.d1Queries).toBeGreaterThan(0);
    expect(list!.d1Queries).toBeLessThan(LIMITS.d1Queries);
  });

  it("counts what a streamed body spends after its handler returned, and a Durable Object's own calls within its invocation", async () => {
    const p = await createProject();
    await ingestMany(p.key, Array.from({ length: 4_500 }, (_, i) => ({ action: "doc.read", metadata: { i } })));
    // The group commit runs in the ledger's own (private) methods, inside the append call's invocation.
    const append = meterReport().find((r) => r.invocation === "ProjectLedger.append")!;
    expect(append.d1Queries).toBeGreaterThan(0);
    expect(meterReport().some((r) => r.invocation === "ProjectLedger.commit" || r.invocation === "ProjectLedger.exclusive")).toBe(false);
    // Its three pages of 2,000 rows in one part, then a page per part: the later parts are called while the body streams, after the handler answered.
    const spent = async (pages: number) => {
      exportTuning.pages = pages;
      await warmKey(p.key);
      resetMeterReport();
      const res = await call("GET", "/v1/exports?format=csv", { key: p.key });
      expect(res.status).toBe(200);
      return meterReport().find((r) => r.invocation === "GET /v1/exports")!.subrequests;
    };
    try {
      expect((await spent(1)) - (await spent(10))).toBe(2);
    } finally {
      exportTuning.pages = 10;
    }
  }, 30_000);
});
