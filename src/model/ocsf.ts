/**
 * An event as an OCSF event (issue 37, `format=ocsf`), OCSF schema version
 * 1.3.0 (https://schema.ocsf.io/1.3.0, github.com/ocsf/ocsf-schema tag
 * 1.3.0). test/model/ocsf.test.ts checks what this writes against the
 * published class and object definitions, vendored in test/model/ocsf/.
 *
 * The class is API Activity (6003, category 6 Application Activity) unless
 * the action's catalog schema names another in its `ocsf` field; OCSF_CLASSES
 * lists the four supported. In every class:
 *
 * | OCSF                            | Witness                                                        |
 * |---------------------------------|----------------------------------------------------------------|
 * | time, timezone_offset           | occurred_at as epoch ms; 0 (it is UTC)                         |
 * | metadata.version                | "1.3.0"                                                        |
 * | metadata.product, .log_provider | {name: "Witness", vendor_name: "Witness"}, "Witness"           |
 * | metadata.uid                    | id                                                             |
 * | metadata.event_code             | action                                                         |
 * | metadata.original_time          | occurred_at as stored                                          |
 * | metadata.log_name               | project_id                                                     |
 * | metadata.sequence               | seq                                                            |
 * | metadata.tenant_uid             | organization                                                   |
 * | activity_id, activity_name      | the catalog's activity_id, else from the action's last word (ACTIVITY_WORDS, VERB_ACTIVITY); 99 Other has the action as its name |
 * | type_uid, type_name             | class_uid * 100 + activity_id, "<class>: <activity>"           |
 * | severity_id                     | 1 Informational                                                |
 * | status_id                       | 2 Failure when the action ends in failed/denied/rejected or metadata.outcome or metadata.status is failure/failed/denied/error; else 1 Success |
 * | message                         | the display sentence                                           |
 * | actor.user                      | {uid: actor_id, name: actor_name, email_addr: actor_email, type_id/type: actor_type user 1, admin 2, system 3, else 99 and the type as sent} |
 * | src_endpoint.ip                 | ip_address                                                     |
 * | http_request.user_agent         | user_agent                                                     |
 * | unmapped.metadata               | metadata, absent when withheld ("null")                        |
 * | unmapped.changes                | changes: no 1.3.0 class has a generic before/after             |
 * | unmapped.hash, .prev_hash, .signature, .pii_commitment, .anonymized_at, .schema_version, .schema_valid | as in the event shape |
 *
 * OCSF has no nulls: a field without a value leaves its attribute out. An
 * actor with neither id nor name has its e-mail as uid, as an erasure by
 * e-mail names it. Per class:
 *
 * - API Activity: api.operation = action, resources = targets [{uid: id,
 *   name, type}]. The class requires an actor and a src_endpoint; with no
 *   actor identity (none sent, or erased) the actor is {app_uid: project_id}
 *   and with no address src_endpoint is {svc_name: project_id}: the project's
 *   application, which sent the event, is then the one party known to have
 *   taken part.
 * - Account Change: user = the first target of type user, member or account,
 *   else the actor (a change to one's own account). Changes of name, email
 *   and role(s)/group(s) go into user (before) and user_result (after, same
 *   uid), roles as groups [{name}]. Targets go to unmapped.targets.
 * - Authentication: user = the actor, which is then not repeated as actor;
 *   service = {uid: project_id}, as the class wants a service or a
 *   dst_endpoint. Targets go to unmapped.targets.
 * - Web Resources Activity: web_resources = targets (an empty list when
 *   none). The class has an actor only under the host profile, so an event
 *   with one lists metadata.profiles ["host"].
 *
 * Account Change and Authentication require a user: an event with none to
 * name (no target user, no actor identity, as after an erasure) is written
 * as API Activity instead. When no user object carries actor_type (the
 * actor erased), it goes to unmapped.actor_type.
 */
import type { ShapeRow } from "./event-shape";

export const OCSF_VERSION = "1.3.0";

export interface OcsfClass {
  class_uid: number;
  activity_id: number | null;
}

interface ClassDef {
  caption: string;
  category_uid: number;
  category_name: string;
  /** activity_id -> caption: the class's activity_id enum in OCSF 1.3.0. */
  activities: Readonly<Record<number, string>>;
}

/** The classes the catalog may choose; test/model/ocsf.test.ts holds these captions to the vendored definitions. */
export const OCSF_CLASSES: Readonly<Record<number, ClassDef>> = {
  6003: {
    caption: "API Activity",
    category_uid: 6,
    category_name: "Application Activity",
    activities: { 0: "Unknown", 1: "Create", 2: "Read", 3: "Update", 4: "Delete", 99: "Other" },
  },
  6001: {
    caption: "Web Resources Activity",
    category_uid: 6,
    category_name: "Application Activity",
    activities: { 0: "Unknown", 1: "Create", 2: "Read", 3: "Update", 4: "Delete", 5: "Search", 6: "Import", 7: "Export", 8: "Share", 99: "Other" },
  },
  3001: {
    caption: "Account Change",
    category_uid: 3,
    category_name: "Identity & Access Management",
    activities: {
      0: "Unknown", 1: "Create", 2: "Enable", 3: "Password Change", 4: "Password Reset", 5: "Disable", 6: "Delete",
      7: "Attach Policy", 8: "Detach Policy", 9: "Lock", 10: "MFA Factor Enable", 11: "MFA Factor Disable", 99: "Other",
    },
  },
  3002: {
    caption: "Authentication",
    category_uid: 3,
    category_name: "Identity & Access Management",
    activities: { 0: "Unknown", 1: "Logon", 2: "Logoff", 3: "Authentication Ticket", 4: "Service Ticket Request", 5: "Service Ticket Renew", 6: "Preauth", 99: "Other" },
  },
};

const API_ACTIVITY = 6003;
const WEB_RESOURCES = 6001;
const ACCOUNT_CHANGE = 3001;
const AUTHENTICATION = 3002;

/**
 * The action's last dot-separated word -> a verb, for an activity_id the
 * catalog did not give. Only the last word: "document.create_link.viewed"
 * was viewed, whatever its other words say.
 */
const ACTIVITY_WORDS: Readonly<Record<string, string>> = {
  create: "create", created: "create", add: "create", added: "create",
  read: "read", view: "read", viewed: "read", list: "read", listed: "read", get: "read",
  update: "update", updated: "update", change: "update", changed: "update", edit: "update", edited: "update",
  delete: "delete", deleted: "delete", remove: "delete", removed: "delete",
  search: "search", searched: "search", import: "import", imported: "import", export: "export", exported: "export", share: "share", shared: "share",
  enable: "enable", enabled: "enable", disable: "disable", disabled: "disable", lock: "lock", locked: "lock", reset: "reset",
  login: "logon", logon: "logon", signin: "logon", signed_in: "logon", logged_in: "logon",
  logout: "logoff", logoff: "logoff", signout: "logoff", signed_out: "logoff", logged_out: "logoff",
};

/** Verb -> activity_id, per class; a verb a class has no activity for is 99 (Other). */
const VERB_ACTIVITY: Readonly<Record<number, Readonly<Record<string, number>>>> = {
  6003: { create: 1, read: 2, update: 3, delete: 4 },
  6001: { create: 1, read: 2, update: 3, delete: 4, search: 5, import: 6, export: 7, share: 8 },
  // "update" and "reset" are Password Change / Reset only when the action names the password (user.password.changed).
  3001: { create: 1, enable: 2, disable: 5, delete: 6, lock: 9 },
  3002: { logon: 1, logoff: 2 },
};

/** Outcome words that end an action ("user.login.failed"): they set the status, and the word before them the activity. */
const OUTCOME_WORDS: Readonly<Record<string, boolean>> = { failed: false, denied: false, rejected: false, succeeded: true, success: true };
const FAILED_VALUES = new Set(["failure", "failed", "denied", "error"]);

const USER_TYPE_IDS: Readonly<Record<string, [number, string]>> = { user: [1, "User"], admin: [2, "Admin"], system: [3, "System"] };
const TARGET_USER_TYPES = new Set(["user", "member", "account"]);

const PRODUCT = { name: "Witness", vendor_name: "Witness" };

interface Target {
  type: string;
  id: string;
  name?: string | null;
}

interface Change {
  field: string;
  before?: unknown;
  after?: unknown;
}

type Obj = Record<string, unknown>;

/** The event as an OCSF 1.3.0 event object. `cls` is the action's catalog choice; null (or a class not supported) is API Activity. */
export function ocsfEvent(row: ShapeRow, options: { display: string | null; cls: OcsfClass | null }): Obj {
  const metadata = row.metadata === "null" ? undefined : (JSON.parse(row.metadata) as unknown);
  const p = plan(row, options.cls, metadata);
  const def = OCSF_CLASSES[p.classUid];
  const event: Obj = {
    activity_id: p.activityId,
    activity_name: p.activityName,
    category_uid: def.category_uid,
    category_name: def.category_name,
    class_uid: p.classUid,
    class_name: def.caption,
    type_uid: p.classUid * 100 + p.activityId,
    type_name: `${def.caption}: ${def.activities[p.activityId]}`,
    severity_id: 1,
    severity: "Informational",
    status_id: p.failed ? 2 : 1,
    status: p.failed ? "Failure" : "Success",
    time: Date.parse(row.occurred_at),
    timezone_offset: 0,
  };
  if (options.display !== null) event.message = options.display;
  const meta: Obj = {
    version: OCSF_VERSION,
    product: { ...PRODUCT },
    uid: row.id,
    event_code: row.action,
    original_time: row.occurred_at,
    log_name: row.project_id,
    log_provider: PRODUCT.name,
    sequence: row.seq,
  };
  if (row.organization !== null) meta.tenant_uid = row.organization;
  if (p.hostProfile) meta.profiles = ["host"];
  event.metadata = meta;
  if (p.actor) event.actor = p.actor;
  if (p.user) event.user = p.user;
  if (p.userResult) event.user_result = p.userResult;
  if (p.srcEndpoint) event.src_endpoint = p.srcEndpoint;
  if (p.api) event.api = { operation: row.action };
  if (p.resources) event[p.resources] = p.targets.map(resourceOf);
  if (p.service) event.service = { uid: row.project_id };
  if (row.user_agent !== null) event.http_request = { user_agent: row.user_agent };

  const unmapped: Obj = {};
  if (metadata !== undefined) unmapped.metadata = metadata;
  const changes = row.changes === null ? null : (p.changes ?? JSON.parse(row.changes));
  if (changes !== null) unmapped.changes = changes;
  if (p.unmappedTargets && p.targets.length > 0) unmapped.targets = p.targets;
  Object.assign(unmapped, witnessFields(row, p.actorType));
  event.unmapped = unmapped;
  return event;
}

/**
 * ocsfEvent as JSON text, the same value (test/model/ocsf.test.ts holds them
 * equal), written directly: a million-row export spends most of its time
 * here, and JSON.stringify of the built object is about 40% slower. Metadata,
 * changes and targets go into `unmapped` as the canonical JSON text they are
 * stored as, neither parsed nor serialized again.
 */
export function ocsfJson(row: ShapeRow, options: { display: string | null; cls: OcsfClass | null }): string {
  const s = JSON.stringify;
  const p = plan(row, options.cls, undefined);
  const def = OCSF_CLASSES[p.classUid];
  let out =
    `{"activity_id":${p.activityId},"activity_name":${s(p.activityName)},"category_uid":${def.category_uid},"category_name":${s(def.category_name)},` +
    `"class_uid":${p.classUid},"class_name":${s(def.caption)},"type_uid":${p.classUid * 100 + p.activityId},"type_name":${s(`${def.caption}: ${def.activities[p.activityId]}`)},` +
    `"severity_id":1,"severity":"Informational","status_id":${p.failed ? '2,"status":"Failure"' : '1,"status":"Success"'},` +
    `"time":${Date.parse(row.occurred_at)},"timezone_offset":0`;
  if (options.display !== null) out += `,"message":${s(options.display)}`;
  out +=
    `,"metadata":{"version":"${OCSF_VERSION}","product":${PRODUCT_JSON},"uid":${s(row.id)},"event_code":${s(row.action)},` +
    `"original_time":${s(row.occurred_at)},"log_name":${s(row.project_id)},"log_provider":${s(PRODUCT.name)},"sequence":${row.seq}`;
  if (row.organization !== null) out += `,"tenant_uid":${s(row.organization)}`;
  out += p.hostProfile ? ',"profiles":["host"]}' : "}";
  if (p.actor) out += `,"actor":${s(p.actor)}`;
  if (p.user) out += `,"user":${s(p.user)}`;
  if (p.userResult) out += `,"user_result":${s(p.userResult)}`;
  if (p.srcEndpoint) out += `,"src_endpoint":${s(p.srcEndpoint)}`;
  if (p.api) out += `,"api":{"operation":${s(row.action)}}`;
  if (p.resources) out += `,"${p.resources}":${s(p.targets.map(resourceOf))}`;
  if (p.service) out += `,"service":{"uid":${s(row.project_id)}}`;
  if (row.user_agent !== null) out += `,"http_request":{"user_agent":${s(row.user_agent)}}`;

  let unmapped = "";
  const add = (piece: string) => (unmapped += unmapped === "" ? piece : `,${piece}`);
  if (row.metadata !== "null") add(`"metadata":${row.metadata}`);
  if (row.changes !== null) add(`"changes":${row.changes}`);
  if (p.unmappedTargets && p.targets.length > 0) add(`"targets":${row.targets}`);
  const own = s(witnessFields(row, p.actorType));
  if (own !== "{}") add(own.slice(1, -1));
  return `${out},"unmapped":{${unmapped}}}`;
}

const PRODUCT_JSON = JSON.stringify(PRODUCT);

/** What both writers put in an event, apart from what they copy from the row as it is. */
interface Plan {
  classUid: number;
  activityId: number;
  activityName: string;
  failed: boolean;
  actor: Obj | null;
  user: Obj | null;
  userResult: Obj | null;
  srcEndpoint: Obj | null;
  api: boolean;
  /** The attribute the targets are the resources of, in classes that have one. */
  resources: "resources" | "web_resources" | null;
  service: boolean;
  hostProfile: boolean;
  targets: Target[];
  /** Parsed only when Account Change needed them. */
  changes: Change[] | undefined;
  unmappedTargets: boolean;
  actorType: boolean;
}

/** `metadata` is the parsed metadata when the caller has it; undefined: parsed here only if the status needs it. */
function plan(row: ShapeRow, chosen: OcsfClass | null, metadata: unknown): Plan {
  const targets = JSON.parse(row.targets) as Target[];
  const words = row.action.split(".");
  let last = words[words.length - 1].toLowerCase();
  const outcome = words.length > 1 ? OUTCOME_WORDS[last] : undefined;
  if (outcome !== undefined) last = words[words.length - 2].toLowerCase();

  const actorUser = actorUserOf(row);
  const cls = chosen !== null && Object.hasOwn(OCSF_CLASSES, chosen.class_uid) ? chosen : null;
  let classUid = cls ? cls.class_uid : API_ACTIVITY;
  let activityId = cls ? cls.activity_id : null;

  // Account Change and Authentication require a user; an event that names none cannot be of either class.
  let subject: Obj | null = null;
  if (classUid === ACCOUNT_CHANGE) {
    const target = targets.find((t) => TARGET_USER_TYPES.has(t.type.toLowerCase()));
    subject = target ? withValues({ uid: target.id, name: target.name }) : actorUser;
  } else if (classUid === AUTHENTICATION) subject = actorUser;
  if ((classUid === ACCOUNT_CHANGE || classUid === AUTHENTICATION) && subject === null) {
    classUid = API_ACTIVITY;
    activityId = null;
  }
  const def = OCSF_CLASSES[classUid];
  if (activityId === null || !Object.hasOwn(def.activities, activityId)) activityId = deriveActivity(classUid, words, last);

  const p: Plan = {
    classUid,
    activityId,
    activityName: activityId === 99 ? row.action : def.activities[activityId],
    failed: outcome === false || metadataSaysFailed(row.metadata, metadata),
    actor: actorUser ? { user: actorUser } : null,
    user: null,
    userResult: null,
    srcEndpoint: row.ip_address !== null ? { ip: row.ip_address } : null,
    api: false,
    resources: null,
    service: false,
    hostProfile: false,
    targets,
    changes: undefined,
    unmappedTargets: true,
    actorType: actorUser === null && row.actor_type !== null,
  };
  if (classUid === API_ACTIVITY) {
    p.actor ??= { app_uid: row.project_id };
    p.srcEndpoint ??= { svc_name: row.project_id };
    p.api = true;
    if (targets.length > 0) p.resources = "resources";
    p.unmappedTargets = false;
  } else if (classUid === WEB_RESOURCES) {
    p.hostProfile = actorUser !== null;
    p.resources = "web_resources";
    p.unmappedTargets = false;
  } else if (classUid === ACCOUNT_CHANGE) {
    let before: Obj = {};
    let after: Obj | null = null;
    if (row.changes !== null) {
      p.changes = JSON.parse(row.changes) as Change[];
      [before, after] = accountValues(p.changes);
    }
    p.user = { ...subject, ...before };
    if (after) p.userResult = withValues({ uid: subject!.uid, name: subject!.name, ...after });
  } else {
    p.user = subject;
    p.actor = null;
    p.service = true;
  }
  return p;
}

function deriveActivity(classUid: number, words: string[], last: string): number {
  const verb = ACTIVITY_WORDS[last];
  if (classUid === ACCOUNT_CHANGE && words.some((w) => w.toLowerCase() === "password")) {
    if (verb === "update") return 3;
    if (verb === "reset") return 4;
  }
  return (verb !== undefined ? VERB_ACTIVITY[classUid][verb] : undefined) ?? 99;
}

/** The stored metadata text is canonical JSON: without either key in it, nothing needs parsing. */
function metadataSaysFailed(text: string, parsed: unknown): boolean {
  if (!text.includes('"outcome"') && !text.includes('"status"')) return false;
  const m = (parsed === undefined ? JSON.parse(text) : parsed) as unknown;
  if (typeof m !== "object" || m === null || Array.isArray(m)) return false;
  const o = m as Obj;
  for (const value of [o.outcome, o.status]) if (typeof value === "string" && FAILED_VALUES.has(value.toLowerCase())) return true;
  return false;
}

function actorUserOf(row: ShapeRow): Obj | null {
  if (row.actor_id === null && row.actor_name === null && row.actor_email === null) return null;
  const user: Obj = {};
  const uid = row.actor_id ?? (row.actor_name === null ? row.actor_email : null);
  if (uid !== null) user.uid = uid;
  if (row.actor_name !== null) user.name = row.actor_name;
  if (row.actor_email !== null) user.email_addr = row.actor_email;
  if (row.actor_type !== null) {
    const known = USER_TYPE_IDS[row.actor_type.toLowerCase()];
    user.type_id = known ? known[0] : 99;
    user.type = known ? known[1] : row.actor_type;
  }
  return user;
}

function resourceOf(t: Target): Obj {
  return t.name == null ? { uid: t.id, type: t.type } : { uid: t.id, name: t.name, type: t.type };
}

/** Account Change's before/after values of the user fields OCSF has; `after` null when no change maps to one. */
function accountValues(changes: Change[]): [Obj, Obj | null] {
  const before: Obj = {};
  const after: Obj = {};
  let any = false;
  for (const c of changes) {
    const key = USER_FIELDS[c.field.toLowerCase()];
    if (key === undefined) continue;
    const b = userValue(key, c.before);
    const a = userValue(key, c.after);
    if (b !== undefined) before[key] = b;
    if (a !== undefined) (after[key] = a), (any = true);
  }
  return [before, any ? after : null];
}

const USER_FIELDS: Readonly<Record<string, string>> = {
  name: "name", username: "name", email: "email_addr", email_addr: "email_addr",
  role: "groups", roles: "groups", group: "groups", groups: "groups",
};

function userValue(key: string, v: unknown): unknown {
  if (key !== "groups") return typeof v === "string" && v !== "" ? v : undefined;
  const names = typeof v === "string" ? [v] : Array.isArray(v) && v.every((n) => typeof n === "string") ? (v as string[]) : null;
  return names && names.length > 0 ? names.map((name) => ({ name })) : undefined;
}

function witnessFields(row: ShapeRow, actorType: boolean): Obj {
  return withValues({
    actor_type: actorType ? row.actor_type : null,
    hash: row.hash,
    prev_hash: row.prev_hash,
    signature: row.signature,
    pii_commitment: row.pii_commitment,
    anonymized_at: row.anonymized_at,
    schema_version: row.schema_version ?? null,
    schema_valid: row.schema_valid == null ? null : row.schema_valid === 1,
  });
}

/** OCSF has no nulls: an attribute without a value is absent. */
function withValues(o: Obj): Obj {
  const out: Obj = {};
  for (const key in o) if (o[key] !== null && o[key] !== undefined) out[key] = o[key];
  return out;
}
