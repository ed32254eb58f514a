import { describe, expect, it } from "vitest";
import { packEvents, unpackEvents } from "../../src/chain/ledger";
import type { NewEvent } from "../../src/model/new-event";

describe("packEvents", () => {
  it("round-trips every field of every event, nulls included, in order", () => {
    const full: NewEvent = {
      action: "a.b", organization: "org", actor_id: "u", actor_type: "user", actor_name: "Ada", actor_email: "a@b.co",
      targets: '[{"id":"d","name":null,"type":"doc"}]', metadata: '{"x":1}', occurred_at: "2026-05-05T05:05:05.000Z",
      ip_address: "::1", user_agent: "curl", changes: '[{"after":2,"field":"x"}]', schema_version: 3, schema_valid: false,
    };
    const empty: NewEvent = {
      action: "c", organization: null, actor_id: null, actor_type: null, actor_name: null, actor_email: null,
      targets: "[]", metadata: "{}", occurred_at: null, ip_address: null, user_agent: null, changes: null, schema_version: null, schema_valid: null,
    };
    const events = [full, empty, { ...full, action: "d" }];
    const packed = packEvents(events);
    expect(packed.values).toHaveLength(events.length * Object.keys(full).length);
    expect(unpackEvents(structuredClone(packed))).toEqual(events);
    expect(unpackEvents(packEvents([]))).toEqual([]);
  });
});
