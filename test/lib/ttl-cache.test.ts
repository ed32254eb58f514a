import { describe, expect, it } from "vitest";
import { TtlCache } from "../../src/lib/ttl-cache";

describe("TtlCache", () => {
  it("forgets an entry once its time is up, so a revoked key is re-read from D1", () => {
    const cache = new TtlCache<string>(10_000);
    cache.set("k", "row", 0);
    expect(cache.get("k", 9_999)).toBe("row");
    expect(cache.get("k", 10_000)).toBeUndefined();
  });

  it("holds at most maxEntries, dropping the oldest first", () => {
    const cache = new TtlCache<number>(60_000, 2);
    cache.set("a", 1, 0);
    cache.set("b", 2, 0);
    cache.set("c", 3, 0);
    expect([cache.get("a", 1), cache.get("b", 1), cache.get("c", 1)]).toEqual([undefined, 2, 3]);
  });
});
