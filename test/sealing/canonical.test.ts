import { describe, expect, it } from "vitest";
import { canonicalize } from "../../src/sealing/canonical";
import { canonicalPayload } from "../../src/sealing/payload";

describe("canonicalize (RFC 8785)", () => {
  it("sorts keys by UTF-16 code units and drops insignificant whitespace", () => {
    expect(canonicalize({ b: 1, a: [true, null, "x"], "é": 0, A: {} })).toBe('{"A":{},"a":[true,null,"x"],"b":1,"é":0}');
    // RFC 8785 §3.2.3 example: sorting by UTF-16 code units, not code points.
    expect(canonicalize({ "\u20ac": 1, "\r": 2, "\ud83d\ude00": 3, "\u00f6": 4, "1": 5 })).toBe(
      '{"\\r":2,"1":5,"ö":4,"€":1,"😀":3}',
    );
  });

  it("serializes numbers the ECMAScript way and escapes strings minimally", () => {
    expect(canonicalize([1e21, 1e-7, 0.1, -0, 100, 1.5e300])).toBe("[1e+21,1e-7,0.1,0,100,1.5e+300]");
    expect(canonicalize("\u0000\b\t\n\f\r\"\\/\u001f\u007f")).toBe('"\\u0000\\b\\t\\n\\f\\r\\"\\\\/\\u001f\u007f"');
    expect(() => canonicalize(Number.POSITIVE_INFINITY)).toThrow();
    expect(() => canonicalize(Number.NaN)).toThrow();
  });
});

describe("canonicalPayload", () => {
  it("equals canonicalize() of the parsed payload object, which is how a third party rebuilds it", () => {
    const targets = canonicalize([{ type: "document", id: "doc_9", name: null }]);
    const metadata = canonicalize({ z: [1, { b: 2, a: "é\n" }], a: null });
    const fields = {
      id: "0b6c3c6e-0000-4000-8000-000000000000",
      project_id: "demo",
      seq: 7,
      action: 'user."quoted".login',
      organization: null,
      actor_type: "user",
      targets,
      metadata,
      occurred_at: "2026-05-05T05:05:05.000Z",
    };
    const pii = "a".repeat(64);
    const parsed = { ...fields, targets: JSON.parse(targets), metadata: JSON.parse(metadata), pii, v: 1 };
    expect(canonicalPayload(fields, pii)).toBe(canonicalize(parsed));
  });

  it("adds the catalog's fields only when present, in key order, as canonicalize() would", () => {
    const base = {
      id: "0b6c3c6e-0000-4000-8000-000000000001",
      project_id: "demo",
      seq: 8,
      action: "member.role.changed",
      organization: "org_42",
      actor_type: "user",
      targets: canonicalize([{ type: "user", id: "u_81", name: "Bob" }]),
      metadata: canonicalize({ role: "admin" }),
      occurred_at: "2026-05-05T05:05:05.000Z",
    };
    const pii = "b".repeat(64);
    const plain = { ...base, targets: JSON.parse(base.targets), metadata: JSON.parse(base.metadata), pii, v: 1 };
    // Absent and null are the same payload as before the catalog: old hashes stay valid.
    expect(canonicalPayload({ ...base, changes: null, schema_version: null, schema_valid: null }, pii)).toBe(canonicalize(plain));
    const changes = canonicalize([{ field: "role", before: "viewer", after: "admin" }]);
    for (const valid of [1, 0]) {
      const fields = { ...base, changes, schema_version: 3, schema_valid: valid };
      const parsed = { ...plain, changes: JSON.parse(changes), schema_version: 3, schema_valid: valid === 1 };
      expect(canonicalPayload(fields, pii)).toBe(canonicalize(parsed));
    }
    expect(canonicalPayload({ ...base, changes }, pii)).toBe(canonicalize({ ...plain, changes: JSON.parse(changes) }));
  });
});
