import { describe, expect, it } from "vitest";
import { LeasedBudgets, grantLease, type Lease } from "../../src/auth/rate-lease";
import { RateWindows, type RateState } from "../../src/lib/rate-window";

function limiter(limit: number, now: () => number) {
  const windows = new RateWindows();
  const calls = { n: 0, needs: [] as number[] };
  const lease = async (need = 1): Promise<Lease> => {
    calls.n++;
    calls.needs.push(need);
    return grantLease(windows, "ip", limit, need, now());
  };
  return { windows, calls, lease };
}

/** What asking the limiter per request would answer: admitted when the cost fits in what is left. */
function perRequest(limit: number) {
  let left = limit;
  return (cost: number): RateState => {
    const allowed = cost <= left;
    if (allowed) left -= cost;
    return { limit, remaining: left, reset: 60, allowed };
  };
}

const COSTS = [1, 5, 20, 1, 1, 5, 20, 20, 1, 5];

describe("LeasedBudgets with costs", () => {
  it("admits and reports exactly as counting each request's cost at the limiter, refusing what does not fit", async () => {
    const t = 1_000_000;
    const { lease } = limiter(300, () => t);
    const budgets = new LeasedBudgets();
    const reference = perRequest(300);
    for (let i = 0; i < 120; i++) {
      const cost = COSTS[i % COSTS.length];
      expect(await budgets.take("ip:a", 300, lease, t, cost)).toEqual(reference(cost));
    }
  });

  it("refuses a request that costs more than is left, with what is left, and admits cheaper ones after it", async () => {
    const t = 2_000_000;
    const { calls, lease } = limiter(22, () => t);
    const budgets = new LeasedBudgets();
    expect(await budgets.take("ip:b", 22, lease, t, 20)).toEqual({ limit: 22, remaining: 2, reset: 60, allowed: true });
    expect(await budgets.take("ip:b", 22, lease, t, 20)).toEqual({ limit: 22, remaining: 2, reset: 60, allowed: false });
    expect(await budgets.take("ip:b", 22, lease, t, 1)).toEqual({ limit: 22, remaining: 1, reset: 60, allowed: true });
    expect(await budgets.take("ip:b", 22, lease, t, 1)).toEqual({ limit: 22, remaining: 0, reset: 60, allowed: true });
    // Known to be spent: refused here, without a round trip.
    const asked = calls.n;
    expect((await budgets.take("ip:b", 22, lease, t, 5)).allowed).toBe(false);
    expect(calls.n).toBe(asked);
  });

  it("asks the limiter only for what the held tokens lack", async () => {
    const t = 3_000_000;
    const { calls, lease } = limiter(1000, () => t);
    const budgets = new LeasedBudgets();
    await budgets.take("ip:c", 1000, lease, t, 1); // leases 50, holds 49
    await budgets.take("ip:c", 1000, lease, t, 20); // holds 29
    await budgets.take("ip:c", 1000, lease, t, 20); // holds 9
    expect(calls.needs).toEqual([1]);
    const got = await budgets.take("ip:c", 1000, lease, t, 20);
    expect(calls.needs).toEqual([1, 11]);
    expect(got).toEqual({ limit: 1000, remaining: 1000 - 61, reset: 60, allowed: true });
  });

  it("loses and duplicates no token under concurrent costed requests: the burst and a drain spend exactly the limit", async () => {
    const t = 4_000_000;
    const { lease } = limiter(500, () => t);
    const budgets = new LeasedBudgets();
    const costs = Array.from({ length: 80 }, (_, i) => COSTS[i % COSTS.length]);
    const burst = await Promise.all(costs.map((cost) => budgets.take("ip:d", 500, lease, t, cost)));
    const spent = burst.reduce((sum, r, i) => sum + (r.allowed ? costs[i] : 0), 0);
    expect(spent).toBeLessThanOrEqual(500);
    let drained = 0;
    while ((await budgets.take("ip:d", 500, lease, t, 1)).allowed) drained++;
    expect(spent + drained).toBe(500);
  });

  it("never admits more than the limit across isolates with costs", async () => {
    const t = 5_000_000;
    const { lease } = limiter(700, () => t);
    const isolates = [new LeasedBudgets(), new LeasedBudgets(), new LeasedBudgets()];
    let spent = 0;
    const results = await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        const cost = COSTS[i % COSTS.length];
        if ((await isolates[i % 3].take("ip:e", 700, lease, t, cost)).allowed) spent += cost;
      }),
    );
    expect(results).toHaveLength(300);
    expect(spent).toBeLessThanOrEqual(700);
    expect(spent).toBeGreaterThan(700 - 3 * 50 - 20);
  });

  it("pays with a new window's tokens when the window ended while the lease was asked for", async () => {
    let clock = 6_000_000;
    const { lease } = limiter(100, () => clock);
    const budgets = new LeasedBudgets();
    expect(await budgets.take("ip:f", 100, lease, clock, 1)).toMatchObject({ allowed: true, remaining: 99 });
    // 9 tokens held; a verify lacks 11, and the limiter answers just after its window ended.
    const asked = 6_000_000 + 59_999;
    clock = 6_000_000 + 60_001;
    expect(await budgets.take("ip:f", 100, lease, asked, 20)).toEqual({ limit: 100, remaining: 80, reset: 60, allowed: true });
  });

  it("gives the held tokens back when the limiter cannot be reached", async () => {
    const t = 7_000_000;
    const { calls, lease } = limiter(1000, () => t);
    const budgets = new LeasedBudgets();
    await budgets.take("ip:g", 1000, lease, t, 1); // holds 49
    await expect(budgets.take("ip:g", 1000, () => Promise.reject(new Error("limiter down")), t, 60)).rejects.toThrow("limiter down");
    const asked = calls.n;
    expect(await budgets.take("ip:g", 1000, lease, t, 20)).toEqual({ limit: 1000, remaining: 1000 - 21, reset: 60, allowed: true });
    expect(calls.n).toBe(asked);
  });
});
