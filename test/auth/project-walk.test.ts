import { describe, expect, it } from "vitest";
import { MAX_BUSY_RETRY_S, WalkLease } from "../../src/auth/project-walk";
import { RateWindows } from "../../src/lib/rate-window";

const TTL = 60_000;

describe("WalkLease", () => {
  it("admits one walk at a time and refuses the next without spending the project's budget", () => {
    const windows = new RateWindows();
    const lease = new WalkLease();
    const t = 1_000_000;
    const first = lease.start(windows, "project", 100, 20, TTL, t);
    expect(first).toMatchObject({ token: expect.any(String), busy: false, rate: { limit: 100, remaining: 80, reset: 60, allowed: true } });
    // 4.2 s into the first walk: come back in about as long again.
    const second = lease.start(windows, "project", 100, 20, TTL, t + 4_200);
    expect(second).toEqual({ token: null, busy: true, rate: { limit: 100, remaining: 80, reset: 56, allowed: false, retryAfter: 5 } });
    // A walk running for minutes (renewing its lease) is not waited for minutes.
    expect(lease.renew(first.token!, TTL, t + 50_000)).toBe(true);
    expect(lease.start(windows, "project", 100, 20, TTL, t + 55_000).rate.retryAfter).toBe(MAX_BUSY_RETRY_S);
    lease.release(first.token!);
    expect(lease.start(windows, "project", 100, 20, TTL, t + 55_000)).toMatchObject({ busy: false, rate: { remaining: 60, allowed: true } });
  });

  it("refuses a walk the budget cannot pay whole, and pays it again in the next window", () => {
    const windows = new RateWindows();
    const lease = new WalkLease();
    const t = 2_000_000;
    for (let i = 0; i < 2; i++) lease.release(lease.start(windows, "project", 50, 20, TTL, t).token!);
    const short = lease.start(windows, "project", 50, 20, TTL, t + 1_000);
    expect(short).toEqual({ token: null, busy: false, rate: { limit: 50, remaining: 10, reset: 59, allowed: false } });
    // Nothing was taken from the 10 left, and no lease is held.
    expect(windows.left("project", 50, t + 1_000)).toBe(10);
    expect(lease.start(windows, "project", 50, 20, TTL, t + 60_000)).toMatchObject({ token: expect.any(String), rate: { remaining: 30 } });
  });

  it("expires an unrenewed lease, keeps a renewed one, and ignores a stale holder's renewal and release", () => {
    const windows = new RateWindows();
    const lease = new WalkLease();
    const t = 3_000_000;
    const crashed = lease.start(windows, "project", 1000, 20, TTL, t).token!;
    expect(lease.start(windows, "project", 1000, 20, TTL, t + TTL - 1).busy).toBe(true);
    const next = lease.start(windows, "project", 1000, 20, TTL, t + TTL).token!;
    expect(next).not.toBeNull();
    // The crashed holder's late calls leave its successor alone.
    expect(lease.renew(crashed, TTL, t + TTL + 1)).toBe(false);
    lease.release(crashed);
    expect(lease.start(windows, "project", 1000, 20, TTL, t + TTL + 2).busy).toBe(true);
    // Renewed before it expires, the lease outlives its first TTL.
    expect(lease.renew(next, TTL, t + TTL + 50_000)).toBe(true);
    expect(lease.start(windows, "project", 1000, 20, TTL, t + 2 * TTL + 10_000).busy).toBe(true);
    // A holder that renews late takes the project back when no other walk started meanwhile.
    expect(lease.renew(next, TTL, t + 4 * TTL)).toBe(true);
    expect(lease.start(windows, "project", 1000, 20, TTL, t + 4 * TTL + 1).busy).toBe(true);
  });
});
