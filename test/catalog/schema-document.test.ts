import { describe, expect, it } from "vitest";
import { checkJsonSchema, MAX_SCHEMA_BYTES, metadataValidator, parseSchemaDocument } from "../../src/catalog/schema-document";

const metadata = {
  type: "object",
  properties: {
    role: { type: "string", enum: ["viewer", "admin", "owner"] },
    seats: { type: "integer", minimum: 1 },
    sso: { type: "boolean" },
    plan: { enum: ["free", "pro"] },
    region: { const: "eu" },
    address: { type: "object", properties: { city: { type: "string" } } },
  },
  required: ["role"],
};

const issuesOf = (raw: unknown) => {
  const parsed = parseSchemaDocument(raw);
  return parsed.ok ? [] : parsed.issues.map((i) => `${i.path}: ${i.message}`);
};

describe("parseSchemaDocument", () => {
  it("normalizes a full document", () => {
    const parsed = parseSchemaDocument({
      description: "A member's role changed",
      metadata,
      targets: [{ type: "user", required: true }, { type: "org" }],
      actor_types: ["user", "service"],
      changes: { fields: ["role"] },
      filterable: ["role", "seats", "sso", "plan", "region"],
      display: "{actor.name} made {targets.user.name} {metadata.role}",
      ocsf: { class_uid: 3001, activity_id: 99 },
    });
    expect(parsed).toEqual({
      ok: true,
      document: {
        description: "A member's role changed",
        metadata,
        targets: [{ type: "user", required: true }, { type: "org", required: false }],
        actor_types: ["user", "service"],
        changes: { fields: ["role"] },
        filterable: ["role", "seats", "sso", "plan", "region"],
        display: "{actor.name} made {targets.user.name} {metadata.role}",
        ocsf: { class_uid: 3001, activity_id: 99 },
      },
    });
  });

  it("takes an empty document, and explicit nulls as absent fields (a document read back can be PUT again)", () => {
    const empty = { description: null, metadata: null, targets: [], actor_types: null, changes: null, filterable: [], display: null, ocsf: null };
    expect(parseSchemaDocument({})).toEqual({ ok: true, document: empty });
    expect(parseSchemaDocument(empty)).toEqual({ ok: true, document: empty });
  });

  it("refuses what is not an object, and unknown fields by name", () => {
    expect(issuesOf([])).toEqual([": must be a JSON object"]);
    expect(issuesOf({ descripton: "typo", fields: [] })).toEqual(["descripton: unknown field", "fields: unknown field"]);
  });

  it("checks description, targets, actor types and changes", () => {
    expect(issuesOf({ description: "x".repeat(1001) })).toEqual(["description: must be a string of at most 1000 characters"]);
    expect(issuesOf({ targets: [{ type: "user" }, { type: "user", required: "yes" }, { type: "", id: 1 }, "org"] })).toEqual([
      'targets.1.type: "user" is listed twice',
      "targets.1.required: must be true or false",
      "targets.2.id: unknown field",
      "targets.2.type: must be a string of 1 to 64 characters",
      "targets.3: must be an object {type, required}",
    ]);
    expect(issuesOf({ targets: Array.from({ length: 21 }, (_, i) => ({ type: `t${i}` })) })).toEqual(["targets: must have at most 20 entries"]);
    expect(issuesOf({ actor_types: [] })).toEqual(["actor_types: must have 1 to 20 entries"]);
    expect(issuesOf({ actor_types: ["user", "user", "x".repeat(65)] })).toEqual([
      'actor_types.1: "user" is listed twice',
      "actor_types.2: must be a string of 1 to 64 characters",
    ]);
    expect(issuesOf({ changes: { fields: [] } })).toEqual(["changes.fields: must have 1 to 50 entries"]);
    expect(issuesOf({ changes: { fields: ["role"], extra: 1 } })).toEqual(["changes.extra: unknown field"]);
    expect(issuesOf({ changes: ["role"] })).toEqual(["changes: must be an object {fields}"]);
  });

  it("takes an OCSF class format=ocsf supports, with an activity of that class or none", () => {
    const ocsfOf = (ocsf: unknown) => {
      const parsed = parseSchemaDocument({ ocsf });
      return parsed.ok ? parsed.document.ocsf : parsed.issues.map((i) => `${i.path}: ${i.message}`);
    };
    const issueOf = (ocsf: unknown) => (ocsfOf(ocsf) as string[])[0];
    expect(ocsfOf({ class_uid: 6003 })).toEqual({ class_uid: 6003, activity_id: null });
    expect(ocsfOf({ class_uid: 3002, activity_id: null })).toEqual({ class_uid: 3002, activity_id: null });
    expect(ocsfOf({ class_uid: 3002, activity_id: 1 })).toEqual({ class_uid: 3002, activity_id: 1 });
    expect(ocsfOf({ class_uid: 6001, activity_id: 8 })).toEqual({ class_uid: 6001, activity_id: 8 });
    expect(ocsfOf({ class_uid: 3001, activity_id: 0 })).toEqual({ class_uid: 3001, activity_id: 0 });
    expect(ocsfOf(null)).toBeNull();

    const supported = "3001 (Account Change), 3002 (Authentication), 6001 (Web Resources Activity), 6003 (API Activity)";
    expect(ocsfOf({ class_uid: 4002, activity_id: 1 })).toEqual([`ocsf.class_uid: must be one of the supported OCSF classes: ${supported}`]);
    expect(ocsfOf({ class_uid: "6003" })).toEqual([`ocsf.class_uid: must be one of the supported OCSF classes: ${supported}`]);
    expect(ocsfOf({ activity_id: 1 })).toEqual([`ocsf.class_uid: must be one of the supported OCSF classes: ${supported}`]);
    // Inherited names are not classes.
    expect(ocsfOf({ class_uid: "constructor" })).toEqual([`ocsf.class_uid: must be one of the supported OCSF classes: ${supported}`]);
    expect(ocsfOf({ class_uid: 3002, activity_id: 7 })).toEqual([
      "ocsf.activity_id: must be an activity of class 3002 (Authentication): 0 (Unknown), 1 (Logon), 2 (Logoff), 3 (Authentication Ticket), " +
        "4 (Service Ticket Request), 5 (Service Ticket Renew), 6 (Preauth), 99 (Other); or null to derive it from the action",
    ]);
    expect(issueOf({ class_uid: 6003, activity_id: 1.5 })).toMatch(/^ocsf\.activity_id: must be an activity of class 6003 \(API Activity\): 0 \(Unknown\), 1 \(Create\)/);
    expect(issueOf({ class_uid: 6003, activity_id: "1" })).toMatch(/^ocsf\.activity_id: /);
    expect(ocsfOf({ class_uid: 6003, activity: 1 })).toEqual(["ocsf.activity: unknown field"]);
    expect(ocsfOf(6003)).toEqual(["ocsf: must be an object {class_uid, activity_id}"]);
    expect(ocsfOf([6003])).toEqual(["ocsf: must be an object {class_uid, activity_id}"]);
  });

  it("allows filtering only on scalar top-level metadata properties", () => {
    expect(issuesOf({ metadata, filterable: ["address", "missing", "bad key", "role", "role"] })).toEqual([
      'filterable.4: "role" is listed twice',
      "filterable.0: metadata.properties.address must have type string, number, integer or boolean (or an enum or const of such values)",
      'filterable.1: "missing" is not in metadata.properties',
      "filterable.2: must be 1 to 64 characters of A-Z a-z 0-9 _ -",
    ]);
    expect(issuesOf({ filterable: ["role"] })).toEqual(['filterable.0: "role" is not in metadata.properties']);
    expect(issuesOf({ metadata, filterable: ["role", "seats", "sso", "plan", "region", "a", "b", "c", "d"] })[0]).toBe("filterable: must have 0 to 8 entries");
    // Inherited names are not properties.
    expect(issuesOf({ metadata, filterable: ["constructor"] })).toEqual(['filterable.0: "constructor" is not in metadata.properties']);
  });

  it("reports the metadata schema's and the display template's problems at their paths", () => {
    expect(issuesOf({ metadata: { properties: { role: { type: "text" } } }, display: "{who}" })).toEqual([
      "metadata.properties.role.type: must be one of null, boolean, object, array, number, integer, string, or a non-empty array of them without repeats",
      'display: character 2: unknown path root "who" (one of id, action, organization, occurred_at, actor, metadata, targets, changes)',
    ]);
    expect(issuesOf({ display: 42 })).toEqual(["display: must be a string"]);
  });

  it(`refuses a document over ${MAX_SCHEMA_BYTES} UTF-8 bytes, with its size`, () => {
    const fits = { description: "é".repeat(500), metadata: { description: "x".repeat(MAX_SCHEMA_BYTES - 1100) } };
    expect(parseSchemaDocument(fits).ok).toBe(true);
    const big = { metadata: { description: "é".repeat(MAX_SCHEMA_BYTES / 2) } };
    const size = new TextEncoder().encode(JSON.stringify(big)).length;
    expect(parseSchemaDocument(big)).toEqual({
      ok: false,
      issues: [{ path: "", message: `is ${size} bytes; at most ${MAX_SCHEMA_BYTES}` }],
      tooLarge: { size, limit: MAX_SCHEMA_BYTES },
    });
  });
});

describe("checkJsonSchema", () => {
  const problems = (schema: unknown) => checkJsonSchema(schema).map((i) => `${i.path}: ${i.message}`);

  it("accepts the 2020-12 keywords it supports, and boolean schemas", () => {
    expect(problems(true)).toEqual([]);
    expect(problems(false)).toEqual([]);
    const everything = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      $comment: "all of them",
      title: "t",
      description: "d",
      type: ["object", "null"],
      properties: { a: { type: "string", minLength: 1, maxLength: 9, pattern: "^\\p{L}+$", format: "email", contentEncoding: "base64", contentMediaType: "text/plain" } },
      patternProperties: { "^x-": { type: "number", minimum: 0, maximum: 9, exclusiveMinimum: -1, exclusiveMaximum: 10, multipleOf: 0.5 } },
      additionalProperties: { deprecated: true, readOnly: false, writeOnly: false },
      propertyNames: { maxLength: 20 },
      required: ["a"],
      dependentRequired: { a: ["b"] },
      dependentSchemas: { b: { properties: { c: { const: 1 } } } },
      minProperties: 0,
      maxProperties: 10,
      allOf: [{ $ref: "#/$defs/list" }],
      anyOf: [{ required: ["a"] }, { required: ["b"] }],
      oneOf: [{ $ref: "#named" }, true],
      not: { required: ["forbidden"] },
      if: { required: ["a"] },
      then: { minProperties: 1 },
      else: { maxProperties: 9 },
      unevaluatedProperties: true,
      default: {},
      examples: [{ a: "x" }],
      $defs: {
        list: { type: "object", properties: { l: { type: "array", items: { enum: [1, 2] }, prefixItems: [{}], contains: {}, minContains: 1, maxContains: 2, minItems: 0, maxItems: 3, uniqueItems: true, unevaluatedItems: false } } },
        named: { $anchor: "named", contentSchema: { type: "string" } },
      },
    };
    expect(problems(everything)).toEqual([]);
  });

  it("refuses keywords outside the supported set, by path", () => {
    expect(
      problems({
        $id: "https://example.com/s",
        properties: { a: { type: "string", requried: true }, b: { $dynamicRef: "#x" } },
        definitions: { x: {} },
        items: { $recursiveRef: "#", $vocabulary: {} },
      }),
    ).toEqual([
      "metadata.$id: unsupported keyword",
      "metadata.properties.a.requried: unsupported keyword",
      "metadata.properties.b.$dynamicRef: unsupported keyword",
      "metadata.definitions: unsupported keyword (draft 2020-12 uses $defs)",
      "metadata.items.$recursiveRef: unsupported keyword",
      "metadata.items.$vocabulary: unsupported keyword",
    ]);
    // Names every object inherits are not keywords either.
    expect(problems(JSON.parse('{"constructor": {}, "toString": 1, "__proto__": {"type": "string"}}'))).toEqual([
      "metadata.constructor: unsupported keyword",
      "metadata.toString: unsupported keyword",
      "metadata.__proto__: unsupported keyword",
    ]);
  });

  it("checks each keyword's value", () => {
    expect(
      problems({
        $schema: "http://json-schema.org/draft-07/schema#",
        type: [],
        minLength: -1,
        maxItems: 1.5,
        multipleOf: 0,
        minimum: "1",
        pattern: "(",
        patternProperties: { "[": {} },
        required: ["a", "a"],
        dependentRequired: { a: "b" },
        enum: [],
        format: "__proto__",
        uniqueItems: "yes",
        allOf: [],
        items: [{}],
        properties: { a: 1 },
        $anchor: "1bad",
      }),
    ).toEqual([
      'metadata.$schema: must be "https://json-schema.org/draft/2020-12/schema" (the only draft supported)',
      "metadata.type: must be one of null, boolean, object, array, number, integer, string, or a non-empty array of them without repeats",
      "metadata.minLength: must be a non-negative integer",
      "metadata.maxItems: must be a non-negative integer",
      "metadata.multipleOf: must be a number greater than 0",
      "metadata.minimum: must be a number",
      "metadata.pattern: must be a valid regular expression",
      "metadata.patternProperties.[: is not a valid regular expression",
      "metadata.required: must be an array of distinct strings",
      "metadata.dependentRequired: must be an object of arrays of distinct strings",
      "metadata.enum: must be a non-empty array",
      'metadata.format: must be a format name such as "date-time" or "email"',
      "metadata.uniqueItems: must be true or false",
      "metadata.allOf: must be a non-empty array of schemas",
      "metadata.items: must be a JSON Schema: an object or true/false",
      "metadata.properties.a: must be a JSON Schema: an object or true/false",
      "metadata.$anchor: must be a name of letters, digits, - _ . starting with a letter or _",
    ]);
  });

  it("allows only references inside the schema", () => {
    expect(problems({ $defs: { a: { type: "string" } }, properties: { x: { $ref: "#/$defs/a" }, y: { $ref: "#" }, z: { $ref: "#/properties/x" } } })).toEqual([]);
    expect(problems({ $defs: { a: { $anchor: "thing" } }, properties: { x: { $ref: "#thing" } } })).toEqual([]);
    expect(
      problems({
        $defs: { a: { type: "string" } },
        properties: {
          web: { $ref: "https://example.com/schema.json" },
          file: { $ref: "other.json#/a" },
          missing: { $ref: "#/$defs/b" },
          notSchema: { $ref: "#/$defs" },
          anchor: { $ref: "#nothing" },
          inEnum: { $ref: "#/properties/web/$ref" },
        },
      }),
    ).toEqual([
      "metadata.properties.web.$ref: $ref must point inside this schema",
      "metadata.properties.file.$ref: $ref must point inside this schema",
      "metadata.properties.missing.$ref: $ref must point inside this schema",
      "metadata.properties.notSchema.$ref: $ref must point inside this schema",
      "metadata.properties.anchor.$ref: $ref must point inside this schema",
      "metadata.properties.inEnum.$ref: $ref must point inside this schema",
    ]);
  });

  it("refuses references that loop without reaching into the value, at the $ref", () => {
    expect(problems({ $ref: "#" })).toEqual(["metadata.$ref: refers to itself without end"]);
    expect(problems({ $defs: { a: { $ref: "#/$defs/b" }, b: { allOf: [{ $ref: "#/$defs/a" }] } }, $ref: "#/$defs/a" })).toEqual([
      "metadata.$defs.b.allOf.0.$ref: refers to itself without end",
    ]);
    expect(problems({ anyOf: [{ type: "string" }, { not: { $ref: "#" } }] })).toEqual(["metadata.anyOf.1.not.$ref: refers to itself without end"]);
    expect(problems({ if: { $ref: "#/$defs/x" }, $defs: { x: { dependentSchemas: { a: { $ref: "#" } } } } })).toEqual([
      "metadata.$defs.x.dependentSchemas.a.$ref: refers to itself without end",
    ]);
  });

  it("accepts recursion that reaches into the value, and runs it", () => {
    const tree = { type: "object", properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#" } } }, required: ["name"] };
    expect(problems(tree)).toEqual([]);
    const { validator } = metadataValidator(tree);
    expect(validator.validate({ name: "a", children: [{ name: "b", children: [{ name: "c" }] }] }).valid).toBe(true);
    expect(validator.validate({ name: "a", children: [{ children: [] }] }).valid).toBe(false);
  });

  it("refuses nesting deeper than 32 levels", () => {
    let ok: unknown = { type: "string" };
    for (let i = 0; i < 32; i++) ok = { items: ok };
    expect(problems(ok)).toEqual([]);
    expect(problems({ items: ok })).toEqual([`metadata${".items".repeat(33)}: nests deeper than 32 levels`]);
  });

  it("refuses references that fan out into too many checks of one value", () => {
    const $defs: Record<string, unknown> = { d12: { type: "string" } };
    for (let i = 0; i < 12; i++) $defs[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    // Each level doubles: d4 is the first to be checked more than 1000 times over.
    expect(problems({ $defs, $ref: "#/$defs/d0" })).toEqual([
      "metadata.$defs.d4: expands into more than 1000 subschemas for one value (through $ref, allOf, anyOf, oneOf...)",
    ]);
  });

  it("leaves the schema it is given untouched", () => {
    const schema = { properties: { a: { $ref: "#/$defs/a" } }, $defs: { a: {} } };
    const before = JSON.stringify(schema);
    expect(problems(schema)).toEqual([]);
    expect(Object.getOwnPropertyNames(schema.properties.a)).toEqual(["$ref"]);
    expect(JSON.stringify(schema)).toBe(before);
  });

  it("names its root by `at`", () => {
    expect(checkJsonSchema({ x: 1 }, "schema")).toEqual([{ path: "schema.x", message: "unsupported keyword" }]);
  });
});
