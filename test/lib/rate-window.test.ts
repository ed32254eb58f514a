import { describe, expect, it } from "vitest";
import { RateWindows } from "../../src/lib/rate-window";

describe("RateWindows", () => {
  it("counts up to the limit in one window, refuses beyond it without counting, and resets after a minute", () => {
    const w = new RateWindows();
    const t0 = 1_000_000;
    expect(w.hit("k", 2, t0)).toEqual({ limit: 2, remaining: 1, reset: 60, allowed: true });
    expect(w.hit("k", 2, t0 + 30_000)).toEqual({ limit: 2, remaining: 0, reset: 30, allowed: true });
    expect(w.hit("k", 2, t0 + 59_500)).toEqual({ limit: 2, remaining: 0, reset: 1, allowed: false });
    expect(w.hit("other", 2, t0 + 59_500).allowed).toBe(true);
    expect(w.hit("k", 2, t0 + 60_000)).toEqual({ limit: 2, remaining: 1, reset: 60, allowed: true });
  });
});
