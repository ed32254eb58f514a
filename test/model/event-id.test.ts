import { describe, expect, it } from "vitest";
import { idMillis, idTag, locatedTag, mintEventId, tagOfId } from "../../src/model/event-id";
import { uuidV7 } from "../../src/lib/crypto";

/** RFC 9562's layout: version 7 in the 13th hex digit, variant 10xx in the 17th. */
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("located event ids", () => {
  it("are UUIDv7s carrying the received millisecond and the project's tag, random between", async () => {
    const receivedAt = "2026-11-28T13:45:12.345Z";
    const tag = await idTag("p_one");
    const ids = Array.from({ length: 200 }, () => mintEventId(receivedAt, tag));
    for (const id of ids) {
      expect(id).toMatch(UUID_V7);
      expect(idMillis(id)).toBe(Date.parse(receivedAt));
      expect(tagOfId(id)).toBe(tag);
    }
    expect(new Set(ids).size).toBe(200);
    // The 42 random bits: 3 hex digits after the version, 11 bits after the variant.
    expect(new Set(ids.map((id) => id.slice(15, 18))).size).toBeGreaterThan(150);
    // Another project's tag differs (a 32-bit hash of its id).
    expect(await idTag("p_two")).not.toBe(tag);
    expect(tag).toBe(parseInt((await sha256("witness.event-id-tag.v1\np_one")).slice(0, 8), 16));
  });

  it("locate a segment only when every row's id does, in receive order", async () => {
    const tag = await idTag("p_one");
    const at = (ms: number) => new Date(Date.parse("2026-11-28T00:00:00.000Z") + ms).toISOString();
    const row = (ms: number) => ({ id: mintEventId(at(ms), tag), received_at: at(ms) });
    expect(await locatedTag("p_one", [row(0), row(0), row(5)])).toBe(tag);
    expect(await locatedTag("p_two", [row(0), row(5)])).toBeNull();
    // An id minted before located ids: random tail, time a little after received_at.
    expect(await locatedTag("p_one", [row(0), { id: uuidV7(Date.parse(at(7))), received_at: at(5) }])).toBeNull();
    // A clock that stepped back: the segment's first and last receive times would not bound every row.
    expect(await locatedTag("p_one", [row(5), row(3)])).toBeNull();
    expect(await locatedTag("p_one", [])).toBeNull();
    expect(idMillis("not-a-uuid")).toBeNull();
  });
});

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
