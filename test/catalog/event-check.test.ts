import { describe, expect, it } from "vitest";
import { eventChecker, type CheckedEvent } from "../../src/catalog/event-check";
import { checkJsonSchema, parseSchemaDocument, type SchemaDocument } from "../../src/catalog/schema-document";

function documentOf(raw: unknown): SchemaDocument {
  const parsed = parseSchemaDocument(raw);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return parsed.document;
}

const roleChanged = documentOf({
  description: "A member's role in an organization changed",
  metadata: {
    type: "object",
    properties: { role: { type: "string", enum: ["viewer", "admin", "owner"] }, reason: { type: "string", maxLength: 20 } },
    required: ["role"],
  },
  targets: [{ type: "user", required: true }, { type: "org" }],
  actor_types: ["user", "service"],
  changes: { fields: ["role"] },
});

const event = (over: Partial<{ actor_type: string | null; targets: unknown[]; metadata: unknown; changes: unknown[] | null }> = {}): CheckedEvent => ({
  action: "member.role.changed",
  actor_type: over.actor_type === undefined ? "user" : over.actor_type,
  targets: JSON.stringify(over.targets ?? [{ type: "user", id: "usr_1", name: null }, { type: "org", id: "org_1", name: null }]),
  metadata: JSON.stringify(over.metadata ?? { role: "admin" }),
  changes: over.changes === null ? null : JSON.stringify(over.changes ?? [{ field: "role", before: "viewer", after: "admin" }]),
});

describe("eventChecker: member.role.changed", () => {
  const check = eventChecker(roleChanged);
  const said = (e: CheckedEvent) => check(e).map((i) => `${i.path}: ${i.message}`);

  it("passes events that fit", () => {
    expect(check(event())).toEqual([]);
    expect(check(event({ actor_type: "service", targets: [{ type: "user", id: "u", name: "Bob" }], metadata: { role: "owner", reason: "promotion" }, changes: null }))).toEqual([]);
  });

  it("names a metadata value outside the enum, of the wrong type, too long, or missing", () => {
    expect(said(event({ metadata: { role: "superuser" } }))).toEqual(['metadata.role: must be one of "viewer", "admin", "owner"']);
    expect(said(event({ metadata: { role: 3 } }))).toEqual(["metadata.role: must be a string"]);
    expect(said(event({ metadata: { role: "admin", reason: "x".repeat(21) } }))).toEqual(["metadata.reason: must be at most 20 characters"]);
    expect(said(event({ metadata: {} }))).toEqual(["metadata.role: is required"]);
  });

  it("names the actor type and the targets", () => {
    expect(said(event({ actor_type: "bot" }))).toEqual(['actor.type: must be one of "user", "service"']);
    expect(said(event({ actor_type: null }))).toEqual(['actor.type: must be one of "user", "service"']);
    expect(said(event({ targets: [{ type: "user", id: "u", name: null }, { type: "repo", id: "r", name: null }] }))).toEqual([
      'targets.1.type: "repo" is not a target type of this action (one of "user", "org")',
    ]);
    expect(said(event({ targets: [{ type: "org", id: "o", name: null }] }))).toEqual(['targets: must include a target of type "user"']);
  });

  it("names changed fields the schema does not declare", () => {
    expect(said(event({ changes: [{ field: "role", after: "admin" }, { field: "colour", before: "red" }] }))).toEqual([
      'changes.1.field: "colour" is not a declared field (one of "role")',
    ]);
  });

  it("reports every broken part of one event together", () => {
    expect(said(event({ actor_type: "bot", targets: [], metadata: { role: "x" }, changes: [{ field: "plan" }] }))).toEqual([
      'actor.type: must be one of "user", "service"',
      'targets: must include a target of type "user"',
      'metadata.role: must be one of "viewer", "admin", "owner"',
      'changes.0.field: "plan" is not a declared field (one of "role")',
    ]);
  });

  it("leaves out what the document does not declare", () => {
    const open = eventChecker(documentOf({}));
    expect(open(event({ actor_type: "anything", targets: [{ type: "repo", id: "r", name: null }], metadata: { any: 1 }, changes: [{ field: "x" }] }))).toEqual([]);
  });
});

describe("eventChecker: metadata messages", () => {
  const said = (schema: unknown, metadata: unknown) => eventChecker(documentOf({ metadata: schema }))(event({ metadata })).map((i) => `${i.path}: ${i.message}`);

  it("walks nested objects and arrays with dotted paths", () => {
    const schema = {
      type: "object",
      properties: {
        address: { type: "object", properties: { city: { type: "string", minLength: 3 }, zip: { type: "string", pattern: "^[0-9]{4}$" } } },
        tags: { type: "array", items: { type: "string", format: "email" }, maxItems: 3, uniqueItems: true },
        count: { type: "integer", minimum: 1, maximum: 9 },
        ratio: { type: "number", exclusiveMinimum: 0, exclusiveMaximum: 1, multipleOf: 0.25 },
      },
    };
    expect(said(schema, { address: { city: "Oz", zip: "12a4" }, tags: ["a@b.co", "a@b.co", "nope"], count: 0, ratio: 1 })).toEqual([
      "metadata.address.city: must be at least 3 characters",
      'metadata.address.zip: must match pattern "^[0-9]{4}$"',
      "metadata.tags.2: must be a valid email",
      "metadata.tags: must not contain the same item twice",
      "metadata.count: must be at least 1",
      "metadata.ratio: must be less than 1",
    ]);
    expect(said(schema, { count: 2.5, ratio: 0.3, tags: ["a@b.co", "c@d.co", "e@f.co", "g@h.co"] })).toEqual([
      "metadata.tags: must have at most 3 items",
      "metadata.count: must be an integer",
      "metadata.ratio: must be a multiple of 0.25",
    ]);
  });

  it("says why an extra property is refused, and which property name breaks propertyNames", () => {
    expect(said({ properties: { role: {} }, additionalProperties: false }, { role: 1, colour: "red" })).toEqual([
      "metadata.colour: is not allowed (additionalProperties is false)",
    ]);
    expect(said({ propertyNames: { pattern: "^[a-z]+$" } }, { ok: 1, Bad: 2 })).toEqual(['metadata.Bad: property name must match pattern "^[a-z]+$"']);
  });

  it("follows $ref to $defs for the keyword's value", () => {
    const schema = { $defs: { small: { type: "integer", maximum: 5 }, level: { enum: ["low", "high"] } }, properties: { n: { $ref: "#/$defs/small" }, l: { $ref: "#/$defs/level" } } };
    expect(said(schema, { n: 7, l: "mid" })).toEqual(["metadata.n: must be at most 5", 'metadata.l: must be one of "low", "high"']);
  });

  it("prefers the most specific keyword over wrappers, and summarizes anyOf/oneOf instead of listing branches", () => {
    const schema = {
      properties: {
        id: { anyOf: [{ type: "string" }, { type: "integer" }] },
        pick: { oneOf: [{ type: "number" }, { type: "integer" }] },
        both: { allOf: [{ type: "string" }, { minLength: 2 }], const: "ok" },
        no: { not: { type: "null" } },
      },
    };
    expect(said(schema, { id: true, pick: 3, both: 5, no: null })).toEqual([
      'metadata.id: must match at least one of the schemas under "anyOf"',
      'metadata.pick: must match exactly one of the schemas under "oneOf" (it matches 2)',
      "metadata.both: must be a string",
      'metadata.no: must not match the schema under "not"',
    ]);
  });

  it("names the missing property of dependentRequired and the const expected", () => {
    expect(said({ dependentRequired: { card: ["expiry"] }, properties: { kind: { const: "card" } } }, { card: "4242", kind: "cash" })).toEqual([
      'metadata.expiry: is required when "card" is present',
      'metadata.kind: must be "card"',
    ]);
  });

  it("stops at 20 issues", () => {
    const properties = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`p${i}`, { type: "string" }]));
    const metadata = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`p${i}`, i]));
    expect(said({ properties }, metadata)).toHaveLength(20);
  });
});

/**
 * Cases copied verbatim from the official JSON-Schema-Test-Suite
 * (github.com/json-schema-org/JSON-Schema-Test-Suite, tests/draft2020-12/):
 * from enum.json, required.json, minLength.json, pattern.json,
 * additionalProperties.json and ref.json. JSON text, so "__proto__" stays an own key.
 */
const SUITE: Array<{ file: string; cases: Array<{ description: string; schema: unknown; tests: Array<{ description: string; data: unknown; valid: boolean }> }> }> = [
  {
    file: "enum.json",
    cases: JSON.parse(String.raw`[
  {
    "description": "simple enum validation",
    "schema": {
      "$schema": "https://json-schema.org/draft/2020-12/schema",
      "enum": [
        1,
        2,
        3
      ]
    },
    "tests": [
      {
        "description": "one of the enum is valid",
        "data": 1,
        "valid": true,
        "id": "bc16cb75d14903a732326a24d1416757"
      },
      {
        "description": "something else is invalid",
        "data": 4,
        "valid": false,
        "id": "2ea4a168ef00d32d444b3d49dc5a617d"
      }
    ]
  },
  {
    "description": "enums in properties",
    "schema": {
      "$schema": "https://json-schema.org/draft/2020-12/schema",
      "type": "object",
      "properties": {
        "foo": {
          "enum": [
            "foo"
          ]
        },
        "bar": {
          "enum": [
            "bar"
          ]
        }
      },
      "required": [
        "bar"
      ]
    },
    "tests": [
      {
        "description": "both properties are valid",
        "data": {
          "foo": "foo",
          "bar": "bar"
        },
        "valid": true,
        "id": "dba127f9663272184ec3ea3072676b4d"
      },
      {
        "description": "wrong foo value",
        "data": {
          "foo": "foot",
          "bar": "bar"
        },
        "valid": false,
        "id": "0f0cca9923128d29922561fe7d92a436"
      },
      {
        "description": "wrong bar value",
        "data": {
          "foo": "foo",
          "bar": "bart"
        },
        "valid": false,
        "id": "d32cef9094b8a87100a57cee099310d4"
      },
      {
        "description": "missing optional property is valid",
        "data": {
          "bar": "bar"
        },
        "valid": true,
        "id": "23a7c86ef0b1e3cac9ebb6175de888d0"
      },
      {
        "description": "missing required property is invalid",
        "data": {
          "foo": "foo"
        },
        "valid": false,
        "id": "61ac5943d52ba688c77e26a1a7b5d174"
      },
      {
        "description": "missing all properties is invalid",
        "data": {},
        "valid": false,
        "id": "8b7be28a144634955b915ad780f4f2a5"
      }
    ]
  }
]`),
  },
  {
    file: "required.json",
    cases: JSON.parse(String.raw`[
    {
        "description": "required validation",
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "properties": {
                "foo": {},
                "bar": {}
            },
            "required": ["foo"]
        },
        "tests": [
            {
                "description": "present required property is valid",
                "data": {"foo": 1},
                "valid": true
            },
            {
                "description": "non-present required property is invalid",
                "data": {"bar": 1},
                "valid": false
            },
            {
                "description": "ignores arrays",
                "data": [],
                "valid": true
            },
            {
                "description": "ignores strings",
                "data": "",
                "valid": true
            },
            {
                "description": "ignores other non-objects",
                "data": 12,
                "valid": true
            },
            {
                "description": "null is valid",
                "data": null,
                "valid": true
            }
        ]
    },
    {
        "description": "required properties whose names are Javascript object property names",
        "comment": "Ensure JS implementations don't universally consider e.g. __proto__ to always be present in an object.",
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "required": ["__proto__", "toString", "constructor"]
        },
        "tests": [
            {
                "description": "ignores arrays",
                "data": [],
                "valid": true
            },
            {
                "description": "ignores other non-objects",
                "data": 12,
                "valid": true
            },
            {
                "description": "none of the properties mentioned",
                "data": {},
                "valid": false
            },
            {
                "description": "__proto__ present",
                "data": { "__proto__": "foo" },
                "valid": false
            },
            {
                "description": "toString present",
                "data": { "toString": { "length": 37 } },
                "valid": false
            },
            {
                "description": "constructor present",
                "data": { "constructor": { "length": 37 } },
                "valid": false
            },
            {
                "description": "all present",
                "data": { 
                    "__proto__": 12,
                    "toString": { "length": "foo" },
                    "constructor": 37
                },
                "valid": true
            }
        ]
    }
]`),
  },
  {
    file: "minLength.json",
    cases: JSON.parse(String.raw`[
    {
        "description": "minLength validation",
        "specification": [
            {
                "validation": "6.3.2"
            }
        ],
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "minLength": 2
        },
        "tests": [
            {
                "description": "longer is valid",
                "data": "foo",
                "valid": true
            },
            {
                "description": "exact length is valid",
                "data": "fo",
                "valid": true
            },
            {
                "description": "too short is invalid",
                "data": "f",
                "valid": false
            },
            {
                "description": "ignores non-strings",
                "data": 1,
                "valid": true
            },
            {
                "description": "one grapheme is not long enough",
                "data": "\uD83D\uDCA9",
                "valid": false
            }
        ]
    }
]`),
  },
  {
    file: "pattern.json",
    cases: JSON.parse(String.raw`[
    {
        "description": "pattern validation",
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "pattern": "^a*$"
        },
        "tests": [
            {
                "description": "a matching pattern is valid",
                "data": "aaa",
                "valid": true
            },
            {
                "description": "a non-matching pattern is invalid",
                "data": "abc",
                "valid": false
            },
            {
                "description": "ignores booleans",
                "data": true,
                "valid": true
            },
            {
                "description": "ignores integers",
                "data": 123,
                "valid": true
            },
            {
                "description": "ignores floats",
                "data": 1.0,
                "valid": true
            },
            {
                "description": "ignores objects",
                "data": {},
                "valid": true
            },
            {
                "description": "ignores arrays",
                "data": [],
                "valid": true
            },
            {
                "description": "ignores null",
                "data": null,
                "valid": true
            }
        ]
    }
]`),
  },
  {
    file: "additionalProperties.json",
    cases: JSON.parse(String.raw`[
    {
        "description": "additionalProperties being false does not allow other properties",
        "specification": [ { "core":"10.3.2.3", "quote": "The value of \"additionalProperties\" MUST be a valid JSON Schema. Boolean \"false\" forbids everything." } ],
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "properties": {"foo": {}, "bar": {}},
            "patternProperties": { "^v": {} },
            "additionalProperties": false
        },
        "tests": [
            {
                "description": "no additional properties is valid",
                "data": {"foo": 1},
                "valid": true
            },
            {
                "description": "an additional property is invalid",
                "data": {"foo" : 1, "bar" : 2, "quux" : "boom"},
                "valid": false
            },
            {
                "description": "ignores arrays",
                "data": [1, 2, 3],
                "valid": true
            },
            {
                "description": "ignores strings",
                "data": "foobarbaz",
                "valid": true
            },
            {
                "description": "ignores other non-objects",
                "data": 12,
                "valid": true
            },
            {
                "description": "patternProperties are not additional properties",
                "data": {"foo":1, "vroom": 2},
                "valid": true
            }
        ]
    }
]`),
  },
  {
    file: "ref.json",
    cases: JSON.parse(String.raw`[
    {
        "description": "root pointer ref",
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "properties": {
                "foo": {"$ref": "#"}
            },
            "additionalProperties": false
        },
        "tests": [
            {
                "description": "match",
                "data": {"foo": false},
                "valid": true
            },
            {
                "description": "recursive match",
                "data": {"foo": {"foo": false}},
                "valid": true
            },
            {
                "description": "mismatch",
                "data": {"bar": false},
                "valid": false
            },
            {
                "description": "recursive mismatch",
                "data": {"foo": {"bar": false}},
                "valid": false
            }
        ]
    },
    {
        "description": "escaped pointer ref",
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {
                "tilde~field": {"type": "integer"},
                "slash/field": {"type": "integer"},
                "percent%field": {"type": "integer"}
            },
            "properties": {
                "tilde": {"$ref": "#/$defs/tilde~0field"},
                "slash": {"$ref": "#/$defs/slash~1field"},
                "percent": {"$ref": "#/$defs/percent%25field"}
            }
        },
        "tests": [
            {
                "description": "slash invalid",
                "data": {"slash": "aoeu"},
                "valid": false
            },
            {
                "description": "tilde invalid",
                "data": {"tilde": "aoeu"},
                "valid": false
            },
            {
                "description": "percent invalid",
                "data": {"percent": "aoeu"},
                "valid": false
            },
            {
                "description": "slash valid",
                "data": {"slash": 123},
                "valid": true
            },
            {
                "description": "tilde valid",
                "data": {"tilde": 123},
                "valid": true
            },
            {
                "description": "percent valid",
                "data": {"percent": 123},
                "valid": true
            }
        ]
    },
    {
        "description": "nested refs",
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {
                "a": {"type": "integer"},
                "b": {"$ref": "#/$defs/a"},
                "c": {"$ref": "#/$defs/b"}
            },
            "$ref": "#/$defs/c"
        },
        "tests": [
            {
                "description": "nested ref valid",
                "data": 5,
                "valid": true
            },
            {
                "description": "nested ref invalid",
                "data": "a",
                "valid": false
            }
        ]
    }
]`),
  },
];

describe("JSON-Schema-Test-Suite (draft 2020-12)", () => {
  for (const { file, cases } of SUITE) {
    for (const c of cases) {
      it(`${file}: ${c.description}`, () => {
        expect(checkJsonSchema(c.schema)).toEqual([]);
        const check = eventChecker(documentOf({ metadata: c.schema }));
        for (const t of c.tests) {
          // The checker reads metadata as JSON text; the suite's data need not be an object, and the checker does not care.
          const issues = check({ action: "suite", actor_type: null, targets: "[]", metadata: JSON.stringify(t.data), changes: null });
          expect({ test: t.description, valid: issues.length === 0 }).toEqual({ test: t.description, valid: t.valid });
          if (!t.valid) expect(issues[0].path).toMatch(/^metadata(\.|$)/);
        }
      });
    }
  }
});
