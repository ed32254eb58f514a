import { describe, expect, it } from "vitest";
import { createProject, createScopedKey, ingestMany, parseCsv } from "../helpers";
import { eraseApplied } from "../chain/erasure-helpers";
import { consoleFetch, signIn } from "./console-helpers";

/** The text of a page's HTML, entities decoded, for comparing with what was sent. */
const decode = (html: string) =>
  html.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&quot;", '"').replaceAll("&#39;", "'").replaceAll("&amp;", "&");

/** The ids of the events the page's table lists, in order (each links to its event page). */
const listed = (html: string) => [...html.matchAll(/<a href="\/console\/events\/([^"]+)" class="action">/g)].map((m) => decodeURIComponent(m[1]));

/** Every href on the page, as the browser would follow it (entities decoded). */
const hrefs = (html: string) => [...html.matchAll(/href="([^"]*)"/g)].map((m) => decode(m[1]));

const ada = { id: "u_ada", type: "user", name: "Ada Lovelace", email: "ada@example.com" };
const bob = { id: "u_bob", type: "user", name: "Bob Byron" };

/** Ada: 52 events in org_42 (each naming doc d1) and one in org_7; Bob: 3 in org_42, one naming doc d1. */
async function seed(key: string) {
  const adaIn42 = await ingestMany(
    key,
    Array.from({ length: 52 }, (_, i) => ({ action: i % 2 ? "doc.read" : "doc.shared", actor: ada, organization: "org_42", targets: [{ type: "doc", id: "d1", name: "Plan" }] })),
  );
  const adaIn7 = await ingestMany(key, [{ action: "user.login", actor: ada, organization: "org_7" }]);
  const bobIn42 = await ingestMany(key, [
    { action: "doc.read", actor: bob, organization: "org_42", targets: [{ type: "doc", id: "d1" }] },
    { action: "user.login", actor: bob, organization: "org_42" },
    { action: "user.login", actor: bob, organization: "org_42", targets: [{ type: "doc", id: "d2" }] },
  ]);
  return { adaIn42, adaIn7, bobIn42 };
}

const ids = (events: { id: string }[]) => events.map((e) => e.id);
/** Newest first, as the pages list them (a batch's events share one occurred_at order by seq). */
const newestFirst = (events: { id: string; seq: number }[]) => [...events].sort((a, b) => b.seq - a.seq).map((e) => e.id);

describe("console investigation pages", () => {
  it("the actor page lists only that actor's events, newest first and paged, with their activity, organizations and times", async () => {
    const p = await createProject();
    const { adaIn42, adaIn7, bobIn42 } = await seed(p.key);
    const { cookie } = await signIn(p.key);

    const first = await consoleFetch("/console/actor?id=u_ada", { cookie });
    expect(first.status).toBe(200);
    expect(first.text).toContain("<h1 class=\"inv-title\">Actor <code class=\"id\">u_ada</code></h1>");
    const all = newestFirst([...adaIn42, ...adaIn7]);
    expect(listed(first.text)).toEqual(all.slice(0, 50));
    expect(first.text).toContain("<caption>50 events, newest first</caption>");
    for (const id of ids(bobIn42)) expect(first.text).not.toContain(id);
    // The chart counts every one of Ada's 53 events and says so.
    expect(first.text).toMatch(/<svg [^>]*role="img" aria-label="Bar chart of 53 events per hour/);
    expect(first.text).toContain("Counted from all 53 events of this actor.");
    // Her organizations, with counts in words that agree in number, each linking to its page.
    expect(first.text).toContain('<a href="/console/organization?id=org_42" class="id">org_42</a>: 52 events, the last');
    expect(first.text).toContain('<a href="/console/organization?id=org_7" class="id">org_7</a>: 1 event, the last');
    expect(first.text).toContain('<a href="/console/target?type=doc&amp;id=d1" class="id">d1</a>');
    // Times: relative, with the exact UTC in datetime and title.
    const stamp = adaIn7[0].occurred_at as string;
    expect(first.text).toContain(`<time datetime="${stamp}" title="${stamp.slice(0, 19).replace("T", " ")} UTC">`);
    expect(first.text).toMatch(/<time datetime="[^"]+" title="[^"]+ UTC">(just now|\d+ seconds ago)<\/time>/);
    expect(first.text).toContain("Not erased: no erasure names this actor id.");
    expect(first.text).toContain('href="/console/actor/export?id=u_ada&amp;format=csv"');

    // The next page follows the API's cursor and holds the rest.
    const next = hrefs(first.text).find((h) => h.includes("cursor="))!;
    expect(next).toMatch(/^\/console\/actor\?id=u_ada&cursor=/);
    const second = await consoleFetch(next, { cookie });
    expect(second.status).toBe(200);
    expect(listed(second.text)).toEqual(all.slice(50));
    expect(second.text).toContain("<caption>3 events (a later page), newest first</caption>");
    expect(second.text).toContain("End of the list");
    expect(second.text).toContain('<a href="/console/actor?id=u_ada">First page</a>');
  });

  it("counts the chart and lists from the newest 1,000 events when there are more, and says so", { timeout: 60_000 }, async () => {
    const p = await createProject();
    const start = Date.parse("2026-01-01T00:00:00.000Z");
    // 1,010 events, one an hour: the 10 oldest (in org_old) fall outside what is counted.
    const stored = await ingestMany(
      p.key,
      Array.from({ length: 1010 }, (_, i) => ({ action: "doc.read", actor: { id: "u_busy" }, organization: i < 10 ? "org_old" : "org_new", occurred_at: new Date(start + i * 3_600_000).toISOString() })),
    );
    const { cookie } = await signIn(p.key);
    const page = await consoleFetch("/console/actor?id=u_busy", { cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain("<dt>Events</dt><dd>more than 1,000 events</dd>");
    expect(page.text).toContain("Counted from the newest 1,000 events of this actor; there are more, and older ones are not counted (no rollup counts events per actor).");
    expect(page.text).toMatch(/aria-label="Bar chart of 1,000 events per day, from 2026-01-01 to 2026-02-12 \(UTC\)/);
    expect(page.text).toContain('org_new</a>: 1,000 events');
    expect(page.text).not.toContain("org_old");
    // The table still pages through all of them.
    expect(listed(page.text)).toEqual(newestFirst(stored).slice(0, 50));
  });

  it("the organization page lists the organization's events and its actors; the target page the events naming that target", async () => {
    const p = await createProject();
    const { adaIn42, adaIn7, bobIn42 } = await seed(p.key);
    const { cookie } = await signIn(p.key);

    const org = await consoleFetch("/console/organization?id=org_42", { cookie });
    expect(org.status).toBe(200);
    expect(org.text).toContain("Organization <code class=\"id\">org_42</code>");
    const in42 = newestFirst([...adaIn42, ...bobIn42]);
    expect(listed(org.text)).toEqual(in42.slice(0, 50));
    expect(org.text).not.toContain(adaIn7[0].id);
    expect(org.text).toContain("Counted from all 55 events of this organization.");
    expect(org.text).toContain('<a href="/console/actor?id=u_ada" class="id">u_ada</a><span class="muted"> (Ada Lovelace)</span>: 52 events');
    expect(org.text).toContain('<a href="/console/actor?id=u_bob" class="id">u_bob</a><span class="muted"> (Bob Byron)</span>: 3 events');
    expect(org.text).not.toContain('href="/console/organization?id=org_7"');

    const target = await consoleFetch("/console/target?type=doc&id=d1", { cookie });
    expect(target.status).toBe(200);
    expect(target.text).toContain("Target <code class=\"id\">doc</code> <code class=\"id\">d1</code>");
    const naming = newestFirst([...adaIn42, bobIn42[0]]);
    expect(listed(target.text)).toEqual(naming.slice(0, 50));
    expect(target.text).not.toContain(bobIn42[2].id);
    expect(target.text).toContain("Counted from all 53 events naming this target.");
    expect(target.text).toContain(": 1 event, the last");
    // The type is part of a target's identity: d1 of another type is another target.
    const otherType = await consoleFetch("/console/target?type=folder&id=d1", { cookie });
    expect(otherType.status).toBe(200);
    expect(otherType.text).toContain("No events for target <code class=\"id\">folder</code> <code class=\"id\">d1</code>.");
  });

  it("opens the right page for hostile and unusual ids, shows them as text, and its links round-trip them", async () => {
    const p = await createProject();
    const hostile = ["a/b c", `say "hi" it's`, `<script>alert("x")</script>`, "Ада Лавлейс 日本語", "x+y&z=1#h?", "%2F..%2Fkeys"];
    const events = await ingestMany(
      p.key,
      hostile.map((id, i) => ({ action: "doc.read", actor: { id, name: `name ${id}` }, organization: id, targets: [{ type: `kind ${hostile[(i + 1) % hostile.length]}`, id }] })),
    );
    const { cookie } = await signIn(p.key);
    for (const [i, id] of hostile.entries()) {
      const event = events[i];
      const type = `kind ${hostile[(i + 1) % hostile.length]}`;
      for (const path of [`/console/actor?id=${encodeURIComponent(id)}`, `/console/organization?id=${encodeURIComponent(id)}`, `/console/target?type=${encodeURIComponent(type)}&id=${encodeURIComponent(id)}`]) {
        const page = await consoleFetch(path, { cookie });
        expect(page.status, path).toBe(200);
        // Exactly its one event, the id shown as text in the heading: never as markup.
        expect(listed(page.text), path).toEqual([event.id]);
        expect(page.text).not.toContain("<script>alert");
        const heading = /<h1 class="inv-title">([\s\S]*?)<\/h1>/.exec(page.text)![1];
        expect(decode(heading.replace(/<[^>]+>/g, ""))).toContain(id);
        // The page's own links to the actor, the organization and the target lead back to pages listing the same event.
        const links = hrefs(page.text);
        for (const prefix of ["/console/actor?", "/console/organization?", "/console/target?"]) {
          const link = links.find((h) => h.startsWith(prefix))!;
          expect(link, `${path}: ${prefix}`).toBeDefined();
          const params = new URL(link, "https://x").searchParams;
          expect(params.get("id")).toBe(id);
          if (prefix === "/console/target?") expect(params.get("type")).toBe(type);
          expect(listed((await consoleFetch(link, { cookie })).text)).toEqual([event.id]);
        }
      }
    }

    // A 500-character id: longer than any event may carry; the page says so, whole, as text.
    const long = `${"<b>ü".repeat(125)}`;
    const page = await consoleFetch(`/console/actor?id=${encodeURIComponent(long)}`, { cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain("No events for actor");
    expect(page.text).toContain("longer than any event may carry");
    expect(page.text).toContain(`<code class="id">${"&lt;b&gt;ü".repeat(125)}</code>`);
    expect(page.text).not.toContain("<b>");
  });

  it("shows a clear empty state for an id with no events, and a 400 with a form when the id is missing", async () => {
    const p = await createProject();
    await seed(p.key);
    const { cookie } = await signIn(p.key);

    const none = await consoleFetch("/console/actor?id=U_ADA", { cookie });
    expect(none.status).toBe(200);
    expect(none.text).toContain("No events for actor <code class=\"id\">U_ADA</code>.");
    expect(none.text).toContain("Ids are matched exactly");
    expect(none.text).not.toContain("/console/actor/export");
    const noOrg = await consoleFetch("/console/organization?id=org_9", { cookie });
    expect(noOrg.status).toBe(200);
    expect(noOrg.text).toContain("No events for organization <code class=\"id\">org_9</code>.");

    for (const [path, says] of [
      ["/console/actor", "This page needs the actor's id"],
      ["/console/actor?id=", "This page needs the actor's id"],
      ["/console/organization?other=1", "This page needs the organization's id"],
      ["/console/target?type=doc", "This page needs the target's id"],
      ["/console/target?id=d1", "This page needs the target's target type"],
      ["/console/target", "This page needs the target's target type and id"],
      ["/console/actor/export?format=csv", "This page needs the actor's id"],
    ] as const) {
      const res = await consoleFetch(path, { cookie });
      expect(res.status, path).toBe(400);
      expect(decode(res.text), path).toContain(says);
      expect(res.text).toContain(`<form method="get" action="/console/${path.split("/")[2].split(/[?]/)[0]}"`);
    }
    // A cursor that is not one the API gave is its 400, said on the page.
    const badCursor = await consoleFetch("/console/actor?id=u_ada&cursor=nonsense", { cookie });
    expect(badCursor.status).toBe(400);
    expect(badCursor.text).toContain("cursor must be a nextCursor from an earlier page");
    expect(badCursor.text).toContain('<a href="/console/actor?id=u_ada">First page</a>');

    // The form keeps what the address did give.
    const half = await consoleFetch("/console/target?type=doc", { cookie });
    expect(half.text).toContain('<input type="text" name="type" value="doc" required="" autocomplete="off"/>');
  });

  it("an erased actor shows when it was erased, and their events show as anonymized on the organization's page", { timeout: 120_000 }, async () => {
    const p = await createProject();
    const { adaIn42, bobIn42 } = await seed(p.key);
    const erased = await eraseApplied(p.key, "/v1/actors/u_ada");
    const { cookie } = await signIn(p.key);

    const page = await consoleFetch("/console/actor?id=u_ada", { cookie });
    expect(page.status).toBe(200);
    const erasedAt = /<strong class="badge bad">erased<\/strong> on <time datetime="([^"]+)" title="[^"]+ UTC">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC<\/time>/.exec(page.text)?.[1];
    expect(erasedAt).toBeDefined();
    expect(page.text).toContain(": 53 events anonymized.");
    expect(page.text).toContain(`href="/console/target?type=erasure&amp;id=${erased.json.data.erasure_id}"`);
    expect(page.text).toContain("No events for actor <code class=\"id\">u_ada</code>.");
    expect(page.text).toContain("Its erased events no longer carry this actor id");

    const org = await consoleFetch("/console/organization?id=org_42", { cookie });
    expect(listed(org.text)).toEqual(newestFirst([...adaIn42, ...bobIn42]).slice(0, 50));
    // Her events there say they were anonymized, and when: the time the actor page gives the erasure.
    expect(org.text).toContain(`<span class="badge">anonymized</span> <span class="exact">erased <time datetime="${erasedAt}"`);
    expect(org.text).not.toContain("u_ada");
    expect(org.text).not.toContain("Ada Lovelace");
    expect(org.text).toContain("No actor id (none sent, or anonymized): 52 events");

    // Bob was not erased.
    expect((await consoleFetch("/console/actor?id=u_bob", { cookie })).text).toContain("Not erased: no erasure names this actor id.");
  });

  it("downloads only the subject's events through its export link", async () => {
    const p = await createProject();
    const { adaIn42, adaIn7, bobIn42 } = await seed(p.key);
    const { cookie } = await signIn(p.key);
    const page = await consoleFetch("/console/actor?id=u_ada", { cookie });
    const link = hrefs(page.text).find((h) => h.startsWith("/console/actor/export?"))!;
    expect(link).toBe("/console/actor/export?id=u_ada&format=csv");

    const csv = await consoleFetch(link, { cookie });
    expect(csv.status).toBe(200);
    expect(csv.headers.get("Content-Type")).toMatch(/^text\/csv/);
    expect(csv.headers.get("Content-Disposition")).toMatch(new RegExp(`^attachment; filename="witness-${p.id}-\\d{4}-\\d{2}-\\d{2}-actor-u_ada\\.csv"$`));
    expect(csv.headers.get("Cache-Control")).toBe("no-store");
    const [header, ...rows] = parseCsv(csv.text);
    const col = (name: string) => header.indexOf(name);
    expect(rows.map((r) => r[col("actor_id")])).toEqual(rows.map(() => "u_ada"));
    expect(rows.map((r) => r[col("id")]).sort()).toEqual(ids([...adaIn42, ...adaIn7]).sort());

    const json = await consoleFetch("/console/organization/export?id=org_7&format=json", { cookie });
    expect(json.status).toBe(200);
    expect(JSON.parse(json.text).map((e: { id: string }) => e.id)).toEqual(ids(adaIn7));

    const target = await consoleFetch(`/console/target/export?type=doc&id=${encodeURIComponent("d2")}&format=csv`, { cookie });
    expect(target.headers.get("Content-Disposition")).toContain("-target-doc-d2.csv");
    expect(parseCsv(target.text).slice(1).map((r) => r[0])).toEqual([bobIn42[2].id]);

    // A format the API refuses is its 400, said on a page.
    const bad = await consoleFetch("/console/actor/export?id=u_ada&format=xml", { cookie });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("VALIDATION_ERROR: format: format must be csv, json or ocsf");
  });

  it("needs a key that can read, and a session", async () => {
    const p = await createProject();
    await seed(p.key);
    const ingestOnly = await createScopedKey(p.id, ["ingest"]);
    const { cookie } = await signIn(ingestOnly.key);
    for (const path of ["/console/actor?id=u_ada", "/console/organization?id=org_42", "/console/target?type=doc&id=d1", "/console/actor/export?id=u_ada"]) {
      const res = await consoleFetch(path, { cookie });
      expect(res.status, path).toBe(403);
      expect(res.text).toContain("This key cannot read");
      expect(res.text).not.toContain("u_ada");
    }
    const reader = await createScopedKey(p.id, ["read"]);
    expect((await consoleFetch("/console/actor?id=u_ada", { cookie: (await signIn(reader.key)).cookie })).status).toBe(200);
    const anonymous = await consoleFetch("/console/actor?id=u_ada");
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get("Location")).toBe("/console/sign-in");
  });
});
