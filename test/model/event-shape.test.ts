import { describe, expect, it } from "vitest";
import type { Credential } from "../../src/auth/credential";
import { canonicalize } from "../../src/sealing/canonical";
import { eventJson, eventWriter, pageJson, reducedEventJson, SHAPE_COLUMNS, shapeRowOf, type ShapeRow } from "../../src/model/event-shape";

/** The event shape built as an object, the plain way: what eventJson() must write the JSON of. */
function toEvent(row: ShapeRow) {
  const hasActor = row.actor_id !== null || row.actor_type !== null || row.actor_name !== null || row.actor_email !== null;
  return {
    id: row.id,
    project_id: row.project_id,
    seq: row.seq,
    action: row.action,
    organization: row.organization,
    actor: hasActor ? { id: row.actor_id, type: row.actor_type, name: row.actor_name, email: row.actor_email } : null,
    targets: JSON.parse(row.targets),
    metadata: JSON.parse(row.metadata),
    changes: row.changes === null ? null : JSON.parse(row.changes),
    occurred_at: row.occurred_at,
    ip_address: row.ip_address,
    user_agent: row.user_agent,
    hash: row.hash,
    prev_hash: row.prev_hash,
    signature: row.signature,
    pii_commitment: row.pii_commitment,
    anonymized_at: row.anonymized_at,
    schema_version: row.schema_version,
    schema_valid: row.schema_valid === null ? null : row.schema_valid === 1,
    display: null,
  };
}

/** The embed tokens' shape, the plain way: personal fields of other users null, metadata only when granted. */
function toReduced(row: ShapeRow, includeMetadata: boolean) {
  const event = toEvent(row);
  return {
    ...event,
    actor: event.actor && { ...event.actor, email: null },
    metadata: includeMetadata ? event.metadata : null,
    changes: includeMetadata ? event.changes : null,
    ip_address: null,
    user_agent: null,
  };
}

function row(overrides: Partial<ShapeRow> = {}): ShapeRow {
  return {
    id: "7d0c3a8e-2f7b-4f51-9a59-0c6f3f0f2b11",
    project_id: "acme",
    seq: 42,
    action: "document.shared",
    organization: "org_42",
    actor_id: "u_1",
    actor_type: "user",
    actor_name: "Ada",
    actor_email: "ada@example.com",
    targets: canonicalize([{ type: "document", id: "doc_9", name: "Q3 plan" }]),
    metadata: canonicalize({ via: "share-dialog" }),
    occurred_at: "2026-05-05T05:05:05.000Z",
    ip_address: "203.0.113.9",
    user_agent: "curl/8.5",
    hash: "ab".repeat(32),
    prev_hash: "cd".repeat(32),
    signature: "v1:" + "ef".repeat(32),
    pii_commitment: "01".repeat(32),
    anonymized_at: null,
    changes: null,
    schema_version: null,
    schema_valid: null,
    ...overrides,
  };
}

describe("eventJson", () => {
  it("writes exactly JSON.stringify(toEvent(row)) for ordinary, awkward and erased rows", () => {
    const rows = [
      row(),
      row({ actor_id: null, actor_type: null, actor_name: null, actor_email: null, organization: null, prev_hash: null }),
      row({ actor_type: "system", actor_id: null, actor_name: null, actor_email: null, signature: null }),
      row({
        action: 'quote " backslash \\ tab \t nl \n',
        actor_name: "多字节 😀 \u2028 \u0000 lone \ud800",
        metadata: canonicalize({ n: [1e21, 0.1, -0, 1.5e-7, 2 ** 53], s: "</script>", deep: { z: null, a: [true, false, {}] } }),
        targets: canonicalize([]),
      }),
      row({ changes: canonicalize([{ field: "role", before: "viewer", after: "</script>" }]), schema_version: 3, schema_valid: 1 }),
      row({ changes: canonicalize([{ field: "plan", after: { seats: 5 } }]), schema_version: 1, schema_valid: 0 }),
      row({
        anonymized_at: "2026-06-01T00:00:00.000Z",
        actor_id: null,
        actor_name: null,
        actor_email: null,
        ip_address: null,
        user_agent: null,
      }),
    ];
    for (const r of rows) {
      expect(eventJson(r)).toBe(JSON.stringify(toEvent(r)));
      expect(JSON.parse(eventJson(r))).toEqual(toEvent(r));
    }
  });

  it("writes a page as {data, nextCursor}", () => {
    const rows = [row(), row({ seq: 41, id: "other" })];
    expect(JSON.parse(pageJson(rows, "2026-05-05T05:05:05.000Z~41"))).toEqual({
      data: rows.map(toEvent),
      nextCursor: "2026-05-05T05:05:05.000Z~41",
    });
    expect(pageJson([], null)).toBe('{"data":[],"nextCursor":null}');
  });
});

describe("reducedEventJson", () => {
  const rows = [
    row(),
    row({ actor_id: null, actor_type: null, actor_name: null, actor_email: null, ip_address: null }),
    // Only an e-mail: the actor stays an object, as in the full shape, with the e-mail withheld.
    row({ actor_id: null, actor_type: null, actor_name: null, actor_email: "only@example.com" }),
    row({ actor_name: "多字节 😀 \u2028 lone \ud800", metadata: canonicalize({ s: "</script>", n: [1e21, -0] }) }),
    row({ changes: canonicalize([{ field: "secret", before: "old", after: "new" }]), schema_version: 2, schema_valid: 1 }),
  ];

  it("writes exactly JSON.stringify of the reduced object, with and without metadata", () => {
    for (const r of rows) {
      for (const includeMetadata of [false, true]) {
        expect(reducedEventJson(r, includeMetadata)).toBe(JSON.stringify(toReduced(r, includeMetadata)));
      }
      expect(reducedEventJson(r, false)).not.toContain("example.com");
      expect(reducedEventJson(r, false)).not.toContain("203.0.113.9");
    }
  });

  it("is what embed tokens get; API keys get the full shape", () => {
    const embed = eventWriter({ kind: "embed", projectId: "acme", organization: null, includeMetadata: true });
    expect(embed(row())).toBe(reducedEventJson(row(), true));
    const apiKey: Credential = { kind: "api_key", projectId: "acme", prefix: "abc", scopes: ["read"] };
    expect(eventWriter(apiKey)(row())).toBe(eventJson(row()));
    expect(JSON.parse(pageJson([row()], null, embed)).data).toEqual([toReduced(row(), true)]);
  });
});

describe("shapeRowOf", () => {
  it("names each cell of a raw() row after its column in SHAPE_COLUMNS, and nothing else", () => {
    const named = shapeRowOf([...SHAPE_COLUMNS]);
    expect(Object.keys(named).sort()).toEqual([...SHAPE_COLUMNS].sort());
    for (const column of SHAPE_COLUMNS) expect(named[column], column).toBe(column);
  });
});
