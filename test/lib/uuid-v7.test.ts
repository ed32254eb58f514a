import { describe, expect, it } from "vitest";
import { uuidV7 } from "../../src/lib/crypto";

describe("uuidV7", () => {
  it("is an RFC 9562 version 7 UUID carrying the millisecond it was made", () => {
    const at = Date.UTC(2026, 10, 22, 14, 52, 44, 123);
    const id = uuidV7(at);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(id.replace(/-/g, "").slice(0, 12), 16)).toBe(at);
  });

  it("sorts by time across milliseconds and never repeats", () => {
    const t = Date.UTC(2026, 0, 1);
    const ids = Array.from({ length: 2000 }, (_, i) => uuidV7(t + Math.floor(i / 10)));
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 10; i < ids.length; i += 10) expect(ids[i - 1] < ids[i]).toBe(true);
  });
});
