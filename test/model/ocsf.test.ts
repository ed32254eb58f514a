/**
 * format=ocsf (src/model/ocsf.ts) held to the published OCSF 1.3.0 schema,
 * not to the mapping's own idea of it: test/model/ocsf/ holds the class and
 * object definitions verbatim (README.md there names the source), and
 * `check` below applies them the way the OCSF server's event validator does
 * (ocsf/ocsf-server lib/schema/validator2.ex): required attributes, unknown
 * attributes, enum values, types, object constraints, profiles, type_uid and
 * the version. Two of its warnings are errors here (an enum sibling that is
 * not the enum's caption, a string that fails its type's regex): the mapping
 * can always get those right.
 */
import { describe, expect, it } from "vitest";
import { OCSF_CLASSES, OCSF_VERSION, ocsfEvent, ocsfJson, type OcsfClass } from "../../src/model/ocsf";
import type { ShapeRow } from "../../src/model/event-shape";
import { canonicalize } from "../../src/sealing/canonical";
import { check, CLASSES, classByUid } from "./ocsf/checker";

function row(overrides: Partial<ShapeRow> = {}): ShapeRow {
  return {
    id: "01972f5e-8a3b-7c41-9d2e-3f4a5b6c7d8e",
    project_id: "acme",
    seq: 42,
    action: "member.role.changed",
    organization: "org_42",
    actor_id: "u_1",
    actor_type: "user",
    actor_name: "Ada",
    actor_email: "ada@example.com",
    targets: canonicalize([{ type: "user", id: "u_2", name: "Grace" }, { type: "team", id: "t_9", name: null }]),
    metadata: canonicalize({ via: "settings", seats: 5 }),
    occurred_at: "2026-05-05T05:05:05.123Z",
    ip_address: "203.0.113.9",
    user_agent: "Mozilla/5.0 (X11; Linux x86_64)",
    hash: "ab".repeat(32),
    prev_hash: "cd".repeat(32),
    signature: "v1:" + "ef".repeat(32),
    pii_commitment: "01".repeat(32),
    anonymized_at: null,
    changes: canonicalize([{ field: "role", before: "viewer", after: "admin" }]),
    schema_version: 3,
    schema_valid: 1,
    ...overrides,
  };
}

const noActor = { actor_id: null, actor_type: null, actor_name: null, actor_email: null };
const minimal = row({ ...noActor, organization: null, targets: "[]", metadata: "{}", changes: null, ip_address: null, user_agent: null, prev_hash: null, signature: null, schema_version: null, schema_valid: null });
const erased = row({ actor_id: null, actor_name: null, actor_email: null, ip_address: null, user_agent: null, anonymized_at: "2026-06-01T00:00:00.000Z" });
/** As an embed token without include_metadata sees it (src/model/event-shape.ts, reducedEventJson). */
const reduced = row({ actor_email: null, ip_address: null, user_agent: null, metadata: "null", changes: null });
const ROWS = { full: row(), minimal, erased, reduced };

const CLASS_OPTIONS: Array<OcsfClass | null> = [
  null,
  { class_uid: 6003, activity_id: null },
  { class_uid: 6003, activity_id: 4 },
  { class_uid: 3001, activity_id: null },
  { class_uid: 3001, activity_id: 7 },
  { class_uid: 3002, activity_id: null },
  { class_uid: 3002, activity_id: 1 },
  { class_uid: 6001, activity_id: null },
  { class_uid: 6001, activity_id: 8 },
];

const ev = (r: ShapeRow, cls: OcsfClass | null = null, display: string | null = null) => ocsfEvent(r, { display, cls });

describe("the vendored OCSF definitions", () => {
  it("are 1.3.0's, and ocsf.ts's class table says what they say", () => {
    expect(OCSF_VERSION).toBe("1.3.0");
    expect(Object.keys(CLASSES).sort()).toEqual(["account_change", "api_activity", "authentication", "web_resources_activity"]);
    for (const [uid, def] of Object.entries(OCSF_CLASSES)) {
      const cls = classByUid.get(Number(uid))!;
      expect(cls, `class ${uid}`).toBeDefined();
      expect(cls.caption).toBe(def.caption);
      expect(cls.attributes.class_uid.enum).toEqual({ [uid]: expect.objectContaining({ caption: def.caption }) });
      expect(cls.attributes.category_uid.enum).toEqual({ [def.category_uid]: expect.objectContaining({ caption: def.category_name }) });
      const activities = Object.fromEntries(Object.entries(cls.attributes.activity_id.enum!).map(([id, e]) => [id, e.caption]));
      expect(activities).toEqual(Object.fromEntries(Object.entries(def.activities).map(([id, c]) => [id, c])));
      for (const [id, caption] of Object.entries(def.activities)) {
        expect(cls.attributes.type_uid.enum![String(Number(uid) * 100 + Number(id))]?.caption).toBe(`${def.caption}: ${caption}`);
      }
    }
  });

  it("catch what the published schema forbids (the checker is not vacuous)", () => {
    const good = ev(row());
    expect(check(good)).toEqual([]);
    const bad = structuredClone(good) as Record<string, any>;
    delete bad.actor;
    bad.src_endpoint = {};
    bad.severity_id = 7;
    bad.type_uid = 600302;
    bad.time = "2026-05-05";
    bad.metadata.product = { name: "Witness" };
    bad.metadata.version = "1.4.0";
    bad.api.verb = "PUT";
    bad.cloud = { provider: "cf" };
    bad.status = "Failure";
    bad.resources = [{ type: "user" }];
    expect(check(bad).sort()).toEqual(
      [
        "actor: required",
        "api.verb: not defined in api",
        "cloud: not defined in api_activity",
        "metadata.product.vendor_name: required",
        "metadata.version: 1.4.0 is not the vendored 1.3.0",
        "resources[0]: needs at least one of name, uid",
        "severity_id: 7 is not in the enum",
        "src_endpoint: needs at least one of ip, uid, name, hostname, svc_name, instance_uid, interface_uid, interface_name",
        'status: "Failure" is not the caption of status_id 1 (Success)',
        'time: "2026-05-05" is not timestamp_t',
        'type_name: "API Activity: Update" is not the caption of type_uid 600302 (API Activity: Read)',
        "type_uid: not class_uid * 100 + activity_id",
      ].sort(),
    );
    const web = ev(row(), { class_uid: 6001, activity_id: null }) as Record<string, any>;
    delete web.metadata.profiles;
    expect(check(web)).toEqual(["actor: not defined in web_resources_activity"]);
    expect(check({ ...good, src_endpoint: { ip: "not an address" } })).toEqual(['src_endpoint.ip: "not an address" does not match ip_t']);
  });
});

describe("ocsfEvent", () => {
  it("writes every kind of event as a valid event of every supported class", () => {
    for (const [kind, r] of Object.entries(ROWS)) {
      for (const cls of CLASS_OPTIONS) {
        for (const display of [null, "Ada made Grace an admin"]) {
          expect(check(ev(r, cls, display)), `${kind} as ${JSON.stringify(cls)}`).toEqual([]);
        }
      }
    }
  });

  it("maps a full event to API Activity by default", () => {
    expect(ev(row(), null, "Ada made Grace an admin")).toEqual({
      activity_id: 3,
      activity_name: "Update",
      category_uid: 6,
      category_name: "Application Activity",
      class_uid: 6003,
      class_name: "API Activity",
      type_uid: 600303,
      type_name: "API Activity: Update",
      severity_id: 1,
      severity: "Informational",
      status_id: 1,
      status: "Success",
      time: Date.UTC(2026, 4, 5, 5, 5, 5, 123),
      timezone_offset: 0,
      message: "Ada made Grace an admin",
      metadata: {
        version: "1.3.0",
        product: { name: "Witness", vendor_name: "Witness" },
        uid: "01972f5e-8a3b-7c41-9d2e-3f4a5b6c7d8e",
        event_code: "member.role.changed",
        original_time: "2026-05-05T05:05:05.123Z",
        log_name: "acme",
        log_provider: "Witness",
        sequence: 42,
        tenant_uid: "org_42",
      },
      actor: { user: { uid: "u_1", name: "Ada", email_addr: "ada@example.com", type_id: 1, type: "User" } },
      src_endpoint: { ip: "203.0.113.9" },
      api: { operation: "member.role.changed" },
      resources: [
        { uid: "u_2", name: "Grace", type: "user" },
        { uid: "t_9", type: "team" },
      ],
      http_request: { user_agent: "Mozilla/5.0 (X11; Linux x86_64)" },
      unmapped: {
        metadata: { seats: 5, via: "settings" },
        changes: [{ field: "role", before: "viewer", after: "admin" }],
        hash: "ab".repeat(32),
        prev_hash: "cd".repeat(32),
        signature: "v1:" + "ef".repeat(32),
        pii_commitment: "01".repeat(32),
        schema_version: 3,
        schema_valid: true,
      },
    });
  });

  it("names the project's application where API Activity requires an actor or a source the event does not have", () => {
    const e = ev(minimal);
    expect(e).toMatchObject({ actor: { app_uid: "acme" }, src_endpoint: { svc_name: "acme" }, activity_id: 3 });
    expect(e).not.toHaveProperty("resources");
    expect(e).not.toHaveProperty("http_request");
    expect(e).not.toHaveProperty("message");
    expect(e.metadata).not.toHaveProperty("tenant_uid");
    expect(e.unmapped).toEqual({ metadata: {}, hash: "ab".repeat(32), pii_commitment: "01".repeat(32) });
  });

  it("leaves nothing personal in an erased event, and keeps the actor's type in unmapped", () => {
    for (const cls of CLASS_OPTIONS) {
      const text = ocsfJson(erased, { display: null, cls });
      for (const personal of ["u_1", "Ada", "ada@example.com", "203.0.113.9", "Mozilla"]) expect(text, JSON.stringify(cls)).not.toContain(personal);
    }
    const e = ev(erased);
    expect(e.actor).toEqual({ app_uid: "acme" });
    expect(e.unmapped).toMatchObject({ actor_type: "user", anonymized_at: "2026-06-01T00:00:00.000Z" });
  });

  it("leaves out metadata and changes an embed token withholds", () => {
    const e = ev(reduced);
    expect(e.unmapped).not.toHaveProperty("metadata");
    expect(e.unmapped).not.toHaveProperty("changes");
    expect((e.actor as any).user).toEqual({ uid: "u_1", name: "Ada", type_id: 1, type: "User" });
    expect(JSON.stringify(e)).not.toContain("ada@example.com");
  });

  it("derives the activity from the action's last word, per class", () => {
    const activity = (action: string, cls: OcsfClass | null = null) => {
      const e = ev(row({ action }), cls);
      return [e.class_uid, e.activity_id, e.activity_name, e.status_id];
    };
    expect(activity("invoice.created")).toEqual([6003, 1, "Create", 1]);
    expect(activity("member.added")).toEqual([6003, 1, "Create", 1]);
    expect(activity("report.viewed")).toEqual([6003, 2, "Read", 1]);
    expect(activity("audit.listed")).toEqual([6003, 2, "Read", 1]);
    expect(activity("plan.updated")).toEqual([6003, 3, "Update", 1]);
    expect(activity("project.deleted")).toEqual([6003, 4, "Delete", 1]);
    expect(activity("member.removed")).toEqual([6003, 4, "Delete", 1]);
    expect(activity("document.shared")).toEqual([6003, 99, "document.shared", 1]);
    expect(activity("Document.Deleted")).toEqual([6003, 4, "Delete", 1]);
    expect(activity("document.shared", { class_uid: 6001, activity_id: null })).toEqual([6001, 8, "Share", 1]);
    expect(activity("report.exported", { class_uid: 6001, activity_id: null })).toEqual([6001, 7, "Export", 1]);
    expect(activity("user.login", { class_uid: 3002, activity_id: null })).toEqual([3002, 1, "Logon", 1]);
    expect(activity("user.login.failed", { class_uid: 3002, activity_id: null })).toEqual([3002, 1, "Logon", 2]);
    expect(activity("user.signed_out", { class_uid: 3002, activity_id: null })).toEqual([3002, 2, "Logoff", 1]);
    expect(activity("user.password.changed", { class_uid: 3001, activity_id: null })).toEqual([3001, 3, "Password Change", 1]);
    expect(activity("user.password.reset", { class_uid: 3001, activity_id: null })).toEqual([3001, 4, "Password Reset", 1]);
    expect(activity("user.disabled", { class_uid: 3001, activity_id: null })).toEqual([3001, 5, "Disable", 1]);
    expect(activity("member.role.changed", { class_uid: 3001, activity_id: null })).toEqual([3001, 99, "member.role.changed", 1]);
    // The catalog's activity wins over the words; one the class does not have is derived instead.
    expect(activity("member.role.changed", { class_uid: 6003, activity_id: 1 })).toEqual([6003, 1, "Create", 1]);
    expect(activity("member.role.changed", { class_uid: 6003, activity_id: 8 })).toEqual([6003, 3, "Update", 1]);
    // A class it does not support (a document written by a later Witness) is the default.
    expect(activity("member.role.changed", { class_uid: 4001, activity_id: 1 })).toEqual([6003, 3, "Update", 1]);
  });

  it("reports a failure when the action or the metadata says so", () => {
    const status = (r: ShapeRow) => [ev(r).status_id, ev(r).status];
    expect(status(row({ action: "export.denied" }))).toEqual([2, "Failure"]);
    expect(status(row({ metadata: canonicalize({ outcome: "FAILURE" }) }))).toEqual([2, "Failure"]);
    expect(status(row({ metadata: canonicalize({ status: "denied" }) }))).toEqual([2, "Failure"]);
    expect(status(row({ metadata: canonicalize({ status: "active" }) }))).toEqual([1, "Success"]);
    expect(status(row({ metadata: canonicalize({ deep: { outcome: "failure" } }) }))).toEqual([1, "Success"]);
    expect(status(row({ metadata: "null" }))).toEqual([1, "Success"]);
  });

  it("maps Account Change to the target user, before in user and after in user_result", () => {
    const e = ev(row(), { class_uid: 3001, activity_id: null });
    expect(e).toMatchObject({
      class_uid: 3001,
      category_uid: 3,
      type_uid: 300199,
      actor: { user: { uid: "u_1", name: "Ada" } },
      user: { uid: "u_2", name: "Grace", groups: [{ name: "viewer" }] },
      user_result: { uid: "u_2", name: "Grace", groups: [{ name: "admin" }] },
      src_endpoint: { ip: "203.0.113.9" },
      unmapped: { targets: [{ type: "user", id: "u_2", name: "Grace" }, { type: "team", id: "t_9", name: null }] },
    });
    expect(e).not.toHaveProperty("api");
    expect(e).not.toHaveProperty("resources");

    const renamed = ev(
      row({ action: "user.updated", targets: "[]", changes: canonicalize([{ field: "email", before: "old@example.com", after: "new@example.com" }, { field: "plan", after: "pro" }]) }),
      { class_uid: 3001, activity_id: null },
    );
    expect(check(renamed)).toEqual([]);
    // No target user: the actor changed their own account.
    expect(renamed.user).toEqual({ uid: "u_1", name: "Ada", email_addr: "old@example.com", type_id: 1, type: "User" });
    expect(renamed.user_result).toEqual({ uid: "u_1", name: "Ada", email_addr: "new@example.com" });
    expect(renamed.unmapped).toMatchObject({ changes: [{ field: "email" }, { field: "plan", after: "pro" }] });

    const roles = ev(row({ changes: canonicalize([{ field: "roles", after: ["admin", "billing"] }, { field: "name", before: 7 }]) }), { class_uid: 3001, activity_id: null });
    expect(check(roles)).toEqual([]);
    expect(roles.user).toEqual({ uid: "u_2", name: "Grace" });
    expect(roles.user_result).toEqual({ uid: "u_2", name: "Grace", groups: [{ name: "admin" }, { name: "billing" }] });
    expect(ev(row({ changes: null }), { class_uid: 3001, activity_id: 1 })).not.toHaveProperty("user_result");
  });

  it("maps Authentication's user to the actor and its service to the project", () => {
    const e = ev(row({ action: "user.login", targets: "[]", changes: null }), { class_uid: 3002, activity_id: null });
    expect(e).toMatchObject({
      class_uid: 3002,
      type_uid: 300201,
      user: { uid: "u_1", name: "Ada", email_addr: "ada@example.com", type_id: 1, type: "User" },
      service: { uid: "acme" },
      src_endpoint: { ip: "203.0.113.9" },
      http_request: { user_agent: "Mozilla/5.0 (X11; Linux x86_64)" },
    });
    expect(e).not.toHaveProperty("actor");
  });

  it("maps Web Resources Activity's targets to web_resources, and its actor under the host profile", () => {
    const e = ev(row({ action: "document.shared" }), { class_uid: 6001, activity_id: null });
    expect(e).toMatchObject({
      class_uid: 6001,
      type_uid: 600108,
      metadata: { profiles: ["host"] },
      actor: { user: { uid: "u_1" } },
      web_resources: [{ uid: "u_2", name: "Grace", type: "user" }, { uid: "t_9", type: "team" }],
    });
    const anonymous = ev(minimal, { class_uid: 6001, activity_id: 2 });
    expect(anonymous).toMatchObject({ web_resources: [] });
    expect(anonymous).not.toHaveProperty("actor");
    expect(anonymous.metadata).not.toHaveProperty("profiles");
  });

  it("writes an Account Change or Authentication with no user to name as API Activity", () => {
    for (const cls of [{ class_uid: 3001, activity_id: 6 }, { class_uid: 3002, activity_id: 1 }]) {
      const e = ev(row({ ...noActor, action: "user.logged_in", targets: canonicalize([{ type: "team", id: "t_9" }]) }), cls);
      expect(e).toMatchObject({ class_uid: 6003, activity_id: 99, actor: { app_uid: "acme" }, resources: [{ uid: "t_9", type: "team" }] });
      expect(check(e)).toEqual([]);
    }
  });

  it("maps actor types to user.type_id, keeping other types as sent", () => {
    const user = (actor_type: string | null, extra: Partial<ShapeRow> = {}) => (ev(row({ actor_type, ...extra })).actor as any).user;
    expect(user("admin")).toMatchObject({ type_id: 2, type: "Admin" });
    expect(user("System")).toMatchObject({ type_id: 3, type: "System" });
    expect(user("api_key")).toMatchObject({ type_id: 99, type: "api_key" });
    expect(user(null)).toEqual({ uid: "u_1", name: "Ada", email_addr: "ada@example.com" });
    // Only an e-mail: it is the uid (an erasure by e-mail names the actor so).
    expect(user("user", { actor_id: null, actor_name: null })).toEqual({ uid: "ada@example.com", email_addr: "ada@example.com", type_id: 1, type: "User" });
    expect(user("user", { actor_id: null })).toEqual({ name: "Ada", email_addr: "ada@example.com", type_id: 1, type: "User" });
  });
});

describe("ocsfJson", () => {
  it("is the JSON of ocsfEvent, awkward text included", () => {
    const awkward = row({
      action: 'quote " backslash \\ tab \t nl \n',
      actor_name: "多字节 😀 \u2028 \u0000",
      metadata: canonicalize({ n: [1e21, 0.1, -0, 1.5e-7, 2 ** 53], s: "</script>", deep: { z: null, a: [true, false, {}] } }),
      changes: canonicalize([{ field: "plan", after: { seats: 5 } }]),
      schema_valid: 0,
    });
    for (const r of [...Object.values(ROWS), awkward]) {
      for (const cls of CLASS_OPTIONS) {
        for (const display of [null, "a \"quoted\" sentence"]) {
          const options = { display, cls };
          const text = ocsfJson(r, options);
          expect(JSON.parse(text)).toEqual(ocsfEvent(r, options));
          expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(ocsfEvent(r, options))));
        }
      }
    }
  });
});
