import { describe, expect, it } from "vitest";
import { checkTemplate, compileTemplate, MAX_DISPLAY_CHARS, MAX_TEMPLATE_CHARS, type DisplayFields } from "../../src/catalog/display-template";

const fields: DisplayFields = {
  id: "evt_1",
  action: "member.role.changed",
  organization: "org_9",
  occurred_at: "2025-03-01T10:00:00.000Z",
  actor_id: "usr_ada",
  actor_type: "user",
  actor_name: "Ada",
  actor_email: "ada@example.com",
  targets: JSON.stringify([
    { type: "user", id: "usr_bob", name: "Bob" },
    { type: "team", id: "team_1", name: null },
    { type: "user", id: "usr_eve", name: "Eve" },
    { type: "gh.repo", id: "r1", name: "witness" },
  ]),
  metadata: JSON.stringify({ role: "admin", seats: 3, paid: false, tags: ["a", "b"], address: { city: "Oslo" }, empty: "", nothing: null }),
  changes: JSON.stringify([{ field: "role", before: "viewer", after: "admin" }, { field: "plan", after: { tier: 2 } }]),
};

const render = (template: string, over: Partial<DisplayFields> = {}) => compileTemplate(template)({ ...fields, ...over });

describe("compileTemplate: paths", () => {
  it("renders the event's own fields and the actor", () => {
    expect(render("{id} {action} {organization} {occurred_at}")).toBe("evt_1 member.role.changed org_9 2025-03-01T10:00:00.000Z");
    expect(render("{actor.id}/{actor.type}/{actor.name}/{actor.email}")).toBe("usr_ada/user/Ada/ada@example.com");
  });

  it("renders metadata values: strings as they are, numbers and booleans as text, objects and arrays as JSON", () => {
    expect(render("{metadata.role} {metadata.seats} {metadata.paid}")).toBe("admin 3 false");
    expect(render("{metadata.tags} {metadata.address}")).toBe('["a","b"] {"city":"Oslo"}');
    expect(render("{metadata.address.city} {metadata.tags.1}")).toBe("Oslo b");
  });

  it("renders the first target of a type, and a type holding dots", () => {
    expect(render("{targets.user.name} ({targets.user.id}, a {targets.user.type})")).toBe("Bob (usr_bob, a user)");
    expect(render("{targets.gh.repo.name}")).toBe("witness");
    expect(render("[{targets.team.name}]")).toBe("[]");
  });

  it("renders both sides of a change", () => {
    expect(render("{changes.role.before} -> {changes.role.after}")).toBe("viewer -> admin");
    expect(render("[{changes.plan.before}] {changes.plan.after}")).toBe('[] {"tier":2}');
  });

  it("renders anything missing as empty text, never as undefined or null", () => {
    expect(render("[{metadata.missing}|{metadata.nothing}|{metadata.role.deeper}|{metadata.tags.5}|{targets.org.id}|{changes.seats.after}]")).toBe("[|||||]");
    expect(render("[{organization}{actor.name}{changes.role.after}]", { organization: null, actor_name: null, changes: null })).toBe("[]");
    expect(render("[{metadata.role}]", { metadata: "null" })).toBe("[]");
  });
});

describe("compileTemplate: fallbacks and braces", () => {
  it("takes the first alternative that renders non-empty, then the quoted default", () => {
    expect(render("{actor.name|actor.id|\"someone\"}")).toBe("Ada");
    expect(render("{actor.name|actor.id|\"someone\"}", { actor_name: null })).toBe("usr_ada");
    expect(render("{actor.name|actor.id|\"someone\"}", { actor_name: null, actor_id: null })).toBe("someone");
    expect(render("{metadata.empty|metadata.role}")).toBe("admin");
    expect(render("{ metadata.missing | \"a | b {c}\" }")).toBe("a | b {c}");
    expect(render("[{metadata.missing|metadata.nothing}]")).toBe("[]");
  });

  it("writes {{ and }} as literal braces", () => {
    expect(render("{{literal}} {{{metadata.role}}}")).toBe("{literal} {admin}");
  });
});

describe("compileTemplate: hostile input", () => {
  it("keeps markup in values as text, verbatim: escaping is each surface's job", () => {
    const out = render("{actor.name} did {metadata.role}", { actor_name: '<script>alert("x")</script>', metadata: JSON.stringify({ role: "<img src=x onerror=alert(1)>" }) });
    expect(out).toBe('<script>alert("x")</script> did <img src=x onerror=alert(1)>');
  });

  it("reads only the event's own keys, never inherited ones", () => {
    expect(render("{{constructor}}")).toBe("{constructor}");
    expect(render("[{metadata.constructor}|{metadata.__proto__}|{metadata.toString}|{metadata.hasOwnProperty}|{metadata.tags.length}|{metadata.role.length}]")).toBe("[|||||]");
    expect(render("[{targets.constructor.name}|{changes.__proto__.after}]")).toBe("[|]");
    // A key the metadata really has renders, even with such a name.
    expect(render("{metadata.__proto__.x} {metadata.constructor}", { metadata: '{"__proto__":{"x":"own"},"constructor":"c"}' })).toBe("own c");
  });

  it("renders malformed stored JSON as missing rather than throwing", () => {
    expect(render("[{metadata.role}{targets.user.id}]", { metadata: "{", targets: "not json" })).toBe("[]");
  });

  it("follows eight keys deep, and no further", () => {
    const deep = JSON.stringify({ a: { b: { c: { d: { e: { f: { g: { h: "bottom" } } } } } } } });
    expect(render("{metadata.a.b.c.d.e.f.g.h}", { metadata: deep })).toBe("bottom");
    expect(checkTemplate("{metadata.a.b.c.d.e.f.g.h.i}")).toEqual([
      { path: "display", message: 'character 2: "metadata.a.b.c.d.e.f.g.h.i" has too many keys after metadata (9; at most 8)' },
    ]);
  });

  it("parses each JSON column at most once per render, and only when the template uses it", () => {
    const reads = { metadata: 0, targets: 0, changes: 0 };
    const counted = (): DisplayFields => {
      const f = { ...fields };
      for (const column of ["metadata", "targets", "changes"] as const) {
        const value = f[column];
        Object.defineProperty(f, column, { get: () => (reads[column]++, value) });
      }
      return f;
    };
    const plain = compileTemplate("{actor.name} did {action}");
    expect(plain(counted())).toBe("Ada did member.role.changed");
    expect(reads).toEqual({ metadata: 0, targets: 0, changes: 0 });
    const busy = compileTemplate("{metadata.role} {metadata.seats} {metadata.tags.0} {targets.user.id} {targets.team.id}");
    expect(busy(counted())).toBe("admin 3 a usr_bob team_1");
    expect(reads).toEqual({ metadata: 1, targets: 1, changes: 0 });
  });
});

describe("compileTemplate: length", () => {
  it(`cuts the sentence at ${MAX_DISPLAY_CHARS} characters with an ellipsis, never inside a surrogate pair`, () => {
    const long = render("{metadata.note}", { metadata: JSON.stringify({ note: "x".repeat(5000) }) });
    expect(long).toHaveLength(MAX_DISPLAY_CHARS);
    expect(long.endsWith("x…")).toBe(true);
    const emoji = render("{metadata.note}", { metadata: JSON.stringify({ note: "😀".repeat(3000) }) });
    expect(emoji.length).toBeLessThanOrEqual(MAX_DISPLAY_CHARS);
    expect(emoji.endsWith("😀…")).toBe(true);
    expect(render("{metadata.note}", { metadata: JSON.stringify({ note: "y".repeat(MAX_DISPLAY_CHARS) }) })).toBe("y".repeat(MAX_DISPLAY_CHARS));
  });
});

describe("checkTemplate", () => {
  const problems = (template: string) => checkTemplate(template).map((i) => `${i.path}: ${i.message}`);

  it("accepts every documented form", () => {
    expect(checkTemplate('{actor.name|actor.id|"someone"} set {targets.user.name} to {changes.role.after} ({metadata.a.b}) {{ok}} {id}')).toEqual([]);
  });

  it("names the character and the problem", () => {
    expect(problems("Hello {actor.name")).toEqual(['display: character 7: unclosed "{"']);
    expect(problems('Hi {actor.name|"x}')).toEqual(['display: character 4: unclosed "{" (a quote inside it is never closed)']);
    expect(problems("a } b")).toEqual(['display: character 3: stray "}" (write "}}" for a literal brace)']);
    expect(problems("x {} y { }")).toEqual(["display: character 3: empty expression", "display: character 8: empty expression"]);
    expect(problems("{actor.name|}")).toEqual(['display: character 13: empty path between "|"']);
    expect(problems("by {user.name}")).toEqual([
      'display: character 5: unknown path root "user" (one of id, action, organization, occurred_at, actor, metadata, targets, changes)',
    ]);
    expect(problems("{targets.user}")).toEqual(['display: character 2: missing field after "targets.user" (targets.<type>.id, .name or .type)']);
    expect(problems("{targets.user.email}")).toEqual(['display: character 2: "targets.user.email" must end in .id, .name or .type']);
    expect(problems("{changes.role}")).toEqual(['display: character 2: "changes.role" must be changes.<field>.before or changes.<field>.after']);
    expect(problems("{changes.role.now}")).toEqual(['display: character 2: "changes.role.now" must be changes.<field>.before or changes.<field>.after']);
    expect(problems("{metadata}")).toEqual(["display: character 2: metadata needs a key, as in metadata.role"]);
    expect(problems("{actor.phone}")).toEqual(['display: character 2: "actor.phone": actor paths are actor.id, actor.type, actor.name and actor.email']);
    expect(problems("{id.x}")).toEqual(['display: character 2: "id" has no fields']);
    expect(problems("{metadata..a}")).toEqual([
      'display: character 2: "metadata..a" is not a path: keys are one or more characters other than . | { } " and spaces',
    ]);
    expect(problems('{"x"}')).toEqual(["display: character 2: a quoted default needs a path before it"]);
    expect(problems('{actor.id|"x"|actor.name}')).toEqual(["display: character 11: a quoted default must come last"]);
  });

  it(`refuses a template over ${MAX_TEMPLATE_CHARS} characters`, () => {
    expect(problems("a".repeat(MAX_TEMPLATE_CHARS))).toEqual([]);
    expect(problems("a".repeat(MAX_TEMPLATE_CHARS + 1))).toEqual([`display: is ${MAX_TEMPLATE_CHARS + 1} characters; at most ${MAX_TEMPLATE_CHARS}`]);
  });

  it("makes compileTemplate throw for a template it refuses", () => {
    expect(() => compileTemplate("{nope}")).toThrow(/unknown path root "nope"/);
    expect(() => compileTemplate("{")).toThrow(/unclosed/);
  });
});
