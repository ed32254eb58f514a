import { describe, expect, it } from "vitest";
import { call, createProject, createScopedKey, ingest, ingestMany } from "../helpers";
import { consoleFetch, signIn } from "./console-helpers";

const HOSTILE = `<script>alert("x")</script>`;
const HOSTILE_TEXT = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;";

/** The text of a page's HTML, entities decoded, for comparing sentences with what the API answers. */
const decode = (html: string) =>
  html.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&quot;", '"').replaceAll("&#39;", "'").replaceAll("&amp;", "&");

const ROLE_CHANGED = {
  description: "A member's role changed",
  metadata: { type: "object", properties: { role: { enum: ["viewer", "admin", "owner"] } }, required: ["role"] },
  targets: [{ type: "user", required: true }],
  actor_types: ["user"],
  changes: { fields: ["role", "note"] },
  display: '{actor.name|actor.id} made {targets.user.name|targets.user.id} {changes.role.after} (was {changes.role.before|"nothing"})',
};

const roleEvent = (extra: Record<string, unknown> = {}) => ({
  action: "member.role.changed",
  actor: { id: "u_1", type: "user", name: "Ada" },
  targets: [{ type: "user", id: "u_81", name: "Bob" }],
  metadata: { role: "admin" },
  changes: [{ field: "role", before: "viewer", after: "admin" }],
  ...extra,
});

async function putSchema(key: string, action: string, document: unknown) {
  const res = await call("PUT", `/v1/schemas/${encodeURIComponent(action)}`, { key, body: document });
  expect(res.status, res.text).toBe(201);
  return res.json.data;
}

/** The rows of the recorded-actions table: action, count and the schema cell's text. */
function actionRows(html: string) {
  const body = /<h2 id="actions-title">[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(html)![1];
  return [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) => {
    const cells = [...row[1].matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((m) => decode(m[1].replace(/<[^>]+>/g, "")));
    return [cells[0], Number(cells[1]), cells[4]];
  });
}

describe("console catalog", () => {
  it("lists the recorded actions with counts and schema versions, and an admin changes the validation mode through the form", async () => {
    const p = await createProject();
    await putSchema(p.key, "member.role.changed", ROLE_CHANGED);
    await putSchema(p.key, "member.role.changed", { ...ROLE_CHANGED, description: "v2" });
    await putSchema(p.key, "doc.shared", { description: "Not recorded yet" });
    await ingestMany(p.key, [roleEvent(), roleEvent(), { action: "doc.read" }]);
    const { cookie, csrf } = await signIn(p.key);

    const page = await consoleFetch("/console/catalog", { cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain('href="/console/catalog" aria-current="page"');
    const rows = actionRows(page.text);
    expect(rows).toContainEqual(["doc.read", 1, "no schema"]);
    expect(rows).toContainEqual(["member.role.changed", 2, "version 2"]);
    // The service's own records (the schema changes) are listed too, and never offered a schema.
    expect(rows).toContainEqual(["witness.schema.changed", 3, "Witness's own record"]);
    expect(page.text).toContain('href="/console/catalog/member.role.changed"');
    // A schema for an action with no events yet is reachable from the schemas list.
    expect(page.text).toContain('<a href="/console/catalog/doc.shared">doc.shared</a> · version 1');
    expect(page.text).toMatch(/<span class="badge ">off<\/span>/);
    expect(page.text).toContain('<form method="post" action="/console/catalog"');

    const saved = await consoleFetch("/console/catalog", { cookie, form: { csrf, mode: "warn", unknown_actions: "reject" } });
    expect(saved.status).toBe(303);
    expect(saved.headers.get("Location")).toBe("/console/catalog?saved=settings");
    expect((await call("GET", "/v1/catalog/settings", { key: p.key })).json.data).toEqual({ mode: "warn", unknown_actions: "reject" });
    const after = await consoleFetch("/console/catalog?saved=settings", { cookie });
    expect(after.text).toContain("The validation settings were saved");
    expect(after.text).toMatch(/<span class="badge ok">warn<\/span>/);
    expect(after.text).toContain('<option value="warn" selected="">');
    // Ingest now checks: the next event says which version it passed.
    expect((await ingest(p.key, roleEvent())).json.data).toMatchObject({ schema_version: 2, schema_valid: true });

    // A value the API refuses is shown with its code, not a 500; a forged form changes nothing.
    const bad = await consoleFetch("/console/catalog", { cookie, form: { csrf, mode: "strict", unknown_actions: "allow" } });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("VALIDATION_ERROR");
    expect(bad.text).toContain("mode must be &quot;off&quot;, &quot;warn&quot; or &quot;enforce&quot;");
    expect((await consoleFetch("/console/catalog", { cookie, form: { csrf: "forged", mode: "off", unknown_actions: "allow" } })).status).toBe(403);
    expect((await call("GET", "/v1/catalog/settings", { key: p.key })).json.data).toEqual({ mode: "warn", unknown_actions: "reject" });

    // The "open an action" form goes to that action's page.
    const open = await consoleFetch("/console/catalog?action=brand.new", { cookie });
    expect(open.status).toBe(303);
    expect(open.headers.get("Location")).toBe("/console/catalog/brand.new");
  });

  it("shows a read key the catalog without any form and refuses its POSTs; an ingest key cannot open it", async () => {
    const p = await createProject();
    await putSchema(p.key, "member.role.changed", ROLE_CHANGED);
    await ingestMany(p.key, [roleEvent()]);
    const reader = await createScopedKey(p.id, ["read"]);
    const writer = await createScopedKey(p.id, ["ingest"]);
    const asReader = await signIn(reader.key);

    const page = await consoleFetch("/console/catalog", { cookie: asReader.cookie });
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/<span class="badge ">off<\/span>/);
    expect(page.text).toContain("Changing the settings needs an admin key.");
    expect(page.text).not.toContain('method="post" action="/console/catalog"');
    const action = await consoleFetch("/console/catalog/member.role.changed", { cookie: asReader.cookie });
    expect(action.status).toBe(200);
    expect(action.text).toContain("Adding a version needs an admin key.");
    expect(action.text).not.toContain('name="document"');
    // The preview changes nothing, so a read key has it too.
    expect(action.text).toContain("Ada made Bob admin (was viewer)");

    const mode = await consoleFetch("/console/catalog", { cookie: asReader.cookie, form: { csrf: asReader.csrf, mode: "enforce", unknown_actions: "allow" } });
    expect(mode.status).toBe(403);
    expect(mode.text).toContain("This page needs an admin key");
    const version = await consoleFetch("/console/catalog/member.role.changed", { cookie: asReader.cookie, form: { csrf: asReader.csrf, document: "{}" } });
    expect(version.status).toBe(403);
    expect((await call("GET", "/v1/catalog/settings", { key: p.key })).json.data.mode).toBe("off");
    expect((await call("GET", "/v1/schemas/member.role.changed", { key: p.key })).json.data.version).toBe(1);

    const asWriter = await signIn(writer.key);
    const refused = await consoleFetch("/console/catalog", { cookie: asWriter.cookie });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain("This key cannot read");
  });

  it("shows an action's versions, each viewable, and previews the sentence of a real event with the saved or a typed template", async () => {
    const p = await createProject();
    await putSchema(p.key, "member.role.changed", { ...ROLE_CHANGED, display: "{actor.id} changed a role" });
    await putSchema(p.key, "member.role.changed", ROLE_CHANGED);
    const [older, newest] = await ingestMany(p.key, [roleEvent({ actor: { id: "u_2", type: "user", name: "Cy" } }), roleEvent()]);
    const { cookie } = await signIn(p.key);

    const page = await consoleFetch("/console/catalog/member.role.changed", { cookie });
    expect(page.status).toBe(200);
    expect([...page.text.matchAll(/class="version">version (\d+)</g)].map((m) => m[1])).toEqual(["1", "2"]);
    expect(page.text).toContain('<span class="badge ok">newest</span>');
    expect(page.text).toContain("A member&#39;s role changed");
    // The metadata JSON Schema, pretty-printed.
    expect(decode(page.text)).toContain(JSON.stringify(ROLE_CHANGED.metadata, null, 2));
    // The preview renders the most recent event of the action with the newest template: the sentence the API gives it.
    const api = await call("GET", `/v1/events/${newest.id}`, { key: p.key });
    expect(api.json.data.display).toBe("Ada made Bob admin (was viewer)");
    expect(page.text).toContain(`<p class="sentence lead">${api.json.data.display}</p>`);
    expect(page.text).toContain(`href="/console/events/${newest.id}"`);
    // The new-version form starts from the newest document.
    expect(decode(/<textarea name="document"[^>]*>([\s\S]*?)<\/textarea>/.exec(page.text)![1])).toBe(JSON.stringify((await call("GET", "/v1/schemas/member.role.changed", { key: p.key })).json.data.document, null, 2));

    const v1 = await consoleFetch("/console/catalog/member.role.changed?version=1", { cookie });
    expect(v1.text).toContain("older: the newest is 2");
    expect(v1.text).toContain('aria-current="page" class="version">version 1');
    expect(v1.text).toContain('<p class="sentence lead">u_1 changed a role</p>');

    // A typed template, not saved, against a chosen event.
    const typed = await consoleFetch(`/console/catalog/member.role.changed?template=${encodeURIComponent("{actor.name} now holds {metadata.role|\"?\"}")}&event=${older.id}`, { cookie });
    expect(typed.text).toContain('<p class="sentence lead">Cy now holds admin</p>');
    expect(typed.text).toContain("The typed template renders");
    expect((await call("GET", "/v1/schemas/member.role.changed", { key: p.key })).json.data.document.display).toBe(ROLE_CHANGED.display);

    // An invalid template shows checkTemplate's issues, and nothing is rendered.
    const invalid = await consoleFetch(`/console/catalog/member.role.changed?template=${encodeURIComponent("{actor.nickname} did it")}`, { cookie });
    expect(invalid.status).toBe(200);
    expect(invalid.text).toContain("This template is not valid");
    expect(invalid.text).toContain("character 2: &quot;actor.nickname&quot;: actor paths are actor.id, actor.type, actor.name and actor.email");
    expect(invalid.text).not.toContain('class="sentence lead"');
    // An unknown event id and an unknown version are reported in the page, never a 500.
    const missing = await consoleFetch(`/console/catalog/member.role.changed?event=${crypto.randomUUID()}`, { cookie });
    expect(missing.status).toBe(200);
    expect(missing.text).toContain("No event with that id in this project.");
    const noVersion = await consoleFetch("/console/catalog/member.role.changed?version=9", { cookie });
    expect(noVersion.status).toBe(404);
    expect(noVersion.text).toContain("NOT_FOUND");
    const own = await consoleFetch("/console/catalog/witness.key.created", { cookie });
    expect(own.status).toBe(400);
    expect(own.text).toContain("VALIDATION_ERROR");
  });

  it("adds versions through the admin form, and shows the API's issues for a refused document", async () => {
    const p = await createProject();
    const { cookie, csrf } = await signIn(p.key);
    const fresh = await consoleFetch("/console/catalog/invoice.paid", { cookie });
    expect(fresh.status).toBe(200);
    expect(fresh.text).toContain("This action has no schema yet");
    expect(fresh.text).toContain("Add version 1");

    const doc = { description: "An invoice was paid", display: "{actor.id} paid {targets.invoice.id}" };
    const saved = await consoleFetch("/console/catalog/invoice.paid", { cookie, form: { csrf, document: JSON.stringify(doc) } });
    expect(saved.status).toBe(303);
    expect(saved.headers.get("Location")).toBe("/console/catalog/invoice.paid?saved=1");
    const stored = await call("GET", "/v1/schemas/invoice.paid", { key: p.key });
    expect(stored.json.data).toMatchObject({ version: 1, document: doc });
    const shown = await consoleFetch("/console/catalog/invoice.paid?saved=1", { cookie });
    expect(shown.text).toContain("Version 1 was saved");
    expect(shown.text).toContain("This action has no events yet");

    const notJson = await consoleFetch("/console/catalog/invoice.paid", { cookie, form: { csrf, document: "{description:" } });
    expect(notJson.status).toBe(400);
    expect(notJson.text).toContain("The document is not valid JSON");
    // What was typed is kept for fixing.
    expect(notJson.text).toContain("{description:</textarea>");
    const refused = await consoleFetch("/console/catalog/invoice.paid", { cookie, form: { csrf, document: JSON.stringify({ display: "{nothing.here}", colour: "blue" }) } });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain("VALIDATION_ERROR");
    expect(refused.text).toContain("<code>colour</code>: unknown field");
    expect((await call("GET", "/v1/schemas/invoice.paid", { key: p.key })).json.data.version).toBe(1);
  });

  it("shows an event's sentence, schema check and a diff of its changes, and hostile values stay text everywhere", async () => {
    const p = await createProject();
    await putSchema(p.key, "member.role.changed", { ...ROLE_CHANGED, display: `${HOSTILE} {actor.name} made {targets.user.name} {changes.role.after}` });
    await call("PUT", "/v1/catalog/settings", { key: p.key, body: { mode: "warn" } });
    const [event] = await ingestMany(p.key, [
      roleEvent({
        actor: { id: "u_1", type: "user", name: `Ada ${HOSTILE}` },
        metadata: { role: "emperor" },
        changes: [
          { field: "role", before: "viewer", after: HOSTILE },
          { field: "note", after: { text: HOSTILE } },
          { field: "team", before: "ops" },
          { field: "level", before: 3, after: 3 },
        ],
      }),
    ]);
    expect(event).toMatchObject({ schema_version: 1, schema_valid: false });
    const { cookie } = await signIn(p.key);

    const page = await consoleFetch(`/console/events/${event.id}`, { cookie });
    expect(page.status).toBe(200);
    expect(page.text).not.toContain("<script>alert");
    expect(page.text.match(/<script[^>]*>/g)).toEqual(['<script type="module" src="/console/assets/event.js">']);
    const sentence = `${HOSTILE_TEXT} Ada ${HOSTILE_TEXT} made Bob ${HOSTILE_TEXT}`;
    expect(page.text).toContain(`<p class="sentence lead">${sentence}</p>`);
    expect(page.text).toMatch(/checked against <a href="\/console\/catalog\/member\.role\.changed\?version=1">version 1<\/a> of its schema: <strong class="badge bad">broke it<\/strong>/);

    const table = /<table class="diff">([\s\S]*?)<\/table>/.exec(page.text)![1];
    const rows = [...table.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].slice(1).map((r) => [...r[1].matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((m) => m[1]));
    expect(rows).toEqual([
      ["<code>role</code>", "<del><code>&quot;viewer&quot;</code></del>", `<ins><code>${JSON.stringify(HOSTILE).replaceAll('"', "&quot;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")}</code></ins>`, "changed"],
      ["<code>note</code>", "<em>(none)</em>", `<ins><code>${JSON.stringify({ text: HOSTILE }).replaceAll('"', "&quot;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")}</code></ins>`, "added"],
      ["<code>team</code>", "<del><code>&quot;ops&quot;</code></del>", "<em>(removed)</em>", "removed"],
      ["<code>level</code>", "<code>3</code>", "<code>3</code>", "unchanged"],
    ]);

    // The events list shows the sentence under the action, as text.
    const list = await consoleFetch("/console/events?action=member.role.changed", { cookie });
    expect(list.text).toContain(`<span class="sentence">${sentence}</span>`);
    expect(list.text).not.toContain("<script>alert");
    // And so does the catalog preview, for the saved template and for a typed one.
    const preview = await consoleFetch(`/console/catalog/member.role.changed?template=${encodeURIComponent(`${HOSTILE}{{{actor.name}}}`)}`, { cookie });
    expect(preview.text).toContain(`<p class="sentence lead">${HOSTILE_TEXT}{Ada ${HOSTILE_TEXT}}</p>`);
    expect(preview.text).toContain(`${HOSTILE_TEXT}{{{actor.name}}}</textarea>`);
    expect(preview.text).not.toContain("<script>alert");
    expect(preview.text).not.toMatch(/<script(?! type="module")/);

    // An event without changes or schema says so.
    const [plain] = await ingestMany(p.key, [{ action: "doc.read" }]);
    const other = await consoleFetch(`/console/events/${plain.id}`, { cookie });
    expect(other.text).not.toContain('class="diff"');
    expect(other.text).not.toContain('class="sentence lead"');
    expect(other.text).toContain("not checked (the catalog was off, or the action had no schema, when it was recorded)");
  });
});
