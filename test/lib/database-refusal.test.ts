import { describe, expect, it } from "vitest";
import { databaseRefusal } from "../../src/lib/database-refusal";

// The messages as Cloudflare documents them (developers.cloudflare.com/d1/observability/debug-d1/) and as
// Durable Object storage reports SQLite's SQLITE_FULL.
describe("databaseRefusal", () => {
  it("reads a full database or account as storage_full", () => {
    for (const message of [
      "D1_ERROR: Exceeded maximum DB size",
      "D1_ERROR: Exceeded maximum account storage limit",
      "database or disk is full: SQLITE_FULL",
    ]) {
      expect(databaseRefusal(new Error(message))).toEqual({ reason: "storage_full", retryAfter: 60 });
    }
  });

  it("reads D1's queue refusals as database_overloaded", () => {
    for (const message of ["D1_ERROR: D1 DB is overloaded. Requests queued for too long.", "D1_ERROR: D1 DB is overloaded. Too many requests queued."]) {
      expect(databaseRefusal(new Error(message))).toEqual({ reason: "database_overloaded", retryAfter: 5 });
    }
  });

  it("finds the message in an error's cause, as older D1 bindings put it", () => {
    expect(databaseRefusal(new Error("D1_ERROR", { cause: new Error("Exceeded maximum DB size") }))?.reason).toBe("storage_full");
  });

  it("leaves every other failure a fault", () => {
    expect(databaseRefusal(new Error("D1_ERROR: UNIQUE constraint failed: events.id: SQLITE_CONSTRAINT"))).toBeNull();
    expect(databaseRefusal(new Error("D1 DB reset because its code was updated."))).toBeNull();
  });
});
