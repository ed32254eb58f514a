import { describe, expect, it } from "vitest";
import { normalizeTimestamp } from "../../src/model/cursor";

describe("normalizeTimestamp", () => {
  it.each([
    ["2026-05-05T05:05:05.000Z", "2026-05-05T05:05:05.000Z"],
    ["2026-05-05T05:05:05Z", "2026-05-05T05:05:05.000Z"],
    ["2026-05-05T05:05Z", "2026-05-05T05:05:00.000Z"],
    ["2026-05-05T07:05:05.5+02:00", "2026-05-05T05:05:05.500Z"],
    ["2026-05-05T00:05:05-0500", "2026-05-05T05:05:05.000Z"],
    ["2026-05-05T05:05:05.123999Z", "2026-05-05T05:05:05.123Z"],
    ["2024-02-29T00:00:00Z", "2024-02-29T00:00:00.000Z"],
  ])("normalizes %s to %s", (input, output) => {
    expect(normalizeTimestamp(input)).toBe(output);
  });

  it.each(["", "2026-05-05", "2026-05-05T05:05:05", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-05-05T25:00:00Z", "tomorrow", "1714885505"])(
    "refuses %j",
    (input) => {
      expect(normalizeTimestamp(input)).toBeNull();
    },
  );
});
