import { describe, expect, it } from "vitest";
import { MAX_LEASE } from "../../src/durable/rate-limiter.do";
import { grantLease, LeasedBudgets, type Lease } from "../../src/auth/rate-lease";
import { RateWindows, type RateState } from "../../src/lib/rate-window";

/** A limiter as the RateLimiter DO runs it, with a counter of round trips. */
function limiter(limit: number, now: () => number) {
  const windows = new RateWindows();
  const calls = { n: 0 };
  const lease = async (need = 1): Promise<Lease> => {
    calls.n++;
    return grantLease(windows, "ip", limit, need, now());
  };
  return { windows, calls, lease };
}

describe("LeasedBudgets", () => {
  it("admits exactly the limit with the same RateLimit-Remaining as counting per request, in far fewer round trips", async () => {
    const t = 1_000_000;
    const { calls, lease } = limiter(1500, () => t);
    const budgets = new LeasedBudgets();
    const perRequest = new RateWindows();
    for (let i = 0; i < 1500; i++) {
      const got = await budgets.take("ip:a", 1500, lease, t);
      expect(got).toEqual(perRequest.hit("a", 1500, t));
    }
    const refused = await budgets.take("ip:a", 1500, lease, t);
    expect(refused).toEqual({ limit: 1500, remaining: 0, reset: 60, allowed: false });
    expect(calls.n).toBeLessThan(200);
    // Refused again without asking: the limiter has nothing left in this window.
    const asked = calls.n;
    expect((await budgets.take("ip:a", 1500, lease, t)).allowed).toBe(false);
    expect(calls.n).toBe(asked);
  });

  it("never spends a token of an ended window, and starts over with the limiter's new window", async () => {
    let now = 1_000_000;
    const { lease } = limiter(100, () => now);
    const budgets = new LeasedBudgets();
    const first = (await budgets.take("ip:b", 100, lease, now)) as RateState;
    expect(first).toMatchObject({ allowed: true, remaining: 99, reset: 60 });
    now += 60_000;
    // Tokens of the old window are still held, but the window is over: a new lease, a full budget.
    expect(await budgets.take("ip:b", 100, lease, now)).toEqual({ limit: 100, remaining: 99, reset: 60, allowed: true });
  });

  it("reports a full window's reset when the limiter opened the window after the request read its clock", async () => {
    const asked = 5_000_000;
    // The limiter answers 350 ms later by its clock and opens the window then.
    const { lease } = limiter(10, () => asked + 350);
    const got = await new LeasedBudgets().take("ip:e", 10, lease, asked);
    expect(got).toEqual({ limit: 10, remaining: 9, reset: 60, allowed: true });
  });

  it("keeps budgets per key and per configured limit", async () => {
    const t = 2_000_000;
    const a = limiter(3, () => t);
    const b = limiter(3, () => t);
    const budgets = new LeasedBudgets();
    for (let i = 0; i < 3; i++) expect((await budgets.take("ip:a", 3, a.lease, t)).allowed).toBe(true);
    expect((await budgets.take("ip:a", 3, a.lease, t)).allowed).toBe(false);
    expect((await budgets.take("ip:b", 3, b.lease, t)).allowed).toBe(true);
    // A different limit (configuration changed) does not reuse what was held for the old one.
    const c = limiter(10, () => t);
    expect(await budgets.take("ip:a", 10, c.lease, t)).toMatchObject({ allowed: true, remaining: 9 });
  });

  it("pools leases taken concurrently and still admits no more than the limit", async () => {
    const t = 3_000_000;
    const { lease } = limiter(40, () => t);
    const budgets = new LeasedBudgets();
    const results = await Promise.all(Array.from({ length: 60 }, () => budgets.take("ip:c", 40, lease, t)));
    expect(results.filter((r) => r.allowed).length).toBe(40);
    expect(Math.min(...results.filter((r) => r.allowed).map((r) => r.remaining))).toBe(0);
  });

  it("never admits more than the limit across isolates, each holding its own leases", async () => {
    const t = 4_000_000;
    const { lease } = limiter(500, () => t);
    const isolates = [new LeasedBudgets(), new LeasedBudgets(), new LeasedBudgets()];
    let admitted = 0;
    for (let i = 0; i < 700; i++) if ((await isolates[i % 3].take("ip:d", 500, lease, t)).allowed) admitted++;
    expect(admitted).toBeLessThanOrEqual(500);
    // Held-back tokens are bounded by MAX_LEASE per isolate.
    expect(admitted).toBeGreaterThanOrEqual(500 - 3 * MAX_LEASE);
  });
});
