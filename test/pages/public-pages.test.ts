import { describe, expect, it } from "vitest";
import { wantsHtml } from "../../src/pages/public/negotiate";
import { logPage } from "../../src/pages/public/log-page";
import { BASE, call, createProject, ingest, ingestMany, onEveryShard } from "../helpers";
import { eraseApplied } from "../chain/erasure-helpers";

const BROWSER = { Accept: "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8" };

/** Every public page: strict CSP, nothing inline, the Worker's own stylesheet. */
function expectStrictPage(res: { headers: Headers; text: string }, scripts: boolean) {
  expect(res.headers.get("Content-Type")).toMatch(/^text\/html/);
  const csp = res.headers.get("Content-Security-Policy")!;
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("style-src 'self'");
  expect(csp).toContain(`script-src ${scripts ? "'self'" : "'none'"}`);
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toContain("unsafe-inline");
  expect(csp).not.toMatch(/https?:/);
  expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
  expect(res.text).toContain('<link rel="stylesheet" href="/assets/public/site.css"/>');
  expect(res.text).not.toMatch(/<style|style=|<script>|<script [^>]*>[^<]|\son[a-z]+=/i);
}

describe("content negotiation", () => {
  it("reads Accept the way browsers and API clients send it", () => {
    expect(wantsHtml(BROWSER.Accept)).toBe(true);
    expect(wantsHtml("text/html")).toBe(true);
    for (const accept of [undefined, "", "*/*", "application/json", "application/json, text/html", "text/html;q=0.5, application/json", "text/html;q=0", "text/plain"]) {
      expect(wantsHtml(accept), String(accept)).toBe(false);
    }
  });

  it("GET / answers browsers a landing page and everyone else the JSON it always did", async () => {
    const page = await call("GET", "/", { headers: BROWSER });
    expect(page.status).toBe(200);
    expectStrictPage(page, false);
    expect(page.headers.get("Vary")).toBe("Accept");
    for (const link of ['href="/console"', 'href="/docs"', 'href="/receipts"']) expect(page.text).toContain(link);
    expect(page.text).toMatch(/tamper-evident/i);
    for (const headers of [{}, { Accept: "*/*" }, { Accept: "application/json" }] as Array<Record<string, string>>) {
      const res = await call("GET", "/", { headers });
      expect(res.status).toBe(200);
      expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
      expect(res.json).toEqual({ data: { service: "witness", docs: "/docs", api: "/v1" } });
    }
  });

  it("serves the stylesheet and the check script from the Worker, with 304 revalidation", async () => {
    const css = await call("GET", "/assets/public/site.css");
    expect(css.status).toBe(200);
    expect(css.headers.get("Content-Type")).toBe("text/css; charset=utf-8");
    const js = await call("GET", "/assets/public/check.js");
    expect(js.headers.get("Content-Type")).toBe("text/javascript; charset=utf-8");
    expect(js.text).toContain("witness.receipt.v1");
    expect(js.text).toContain("/.well-known/witness-keys.json");
    const again = await call("GET", "/assets/public/check.js", { headers: { "If-None-Match": js.headers.get("ETag")! } });
    expect(again.status).toBe(304);
  });
});

describe("GET /logs/<log_id>", () => {
  it("is a page for browsers with size, checkpoint, key and monitor command; other clients get today's answer", async () => {
    const p = await createProject();
    await ingestMany(p.key, [{ action: "a" }, { action: "b" }, { action: "c" }]);
    const log = (await call("GET", "/v1/log", { key: p.key })).json.data;
    const page = await call("GET", `/logs/${log.log_id}`, { headers: BROWSER });
    expect(page.status).toBe(200);
    expectStrictPage(page, false);
    expect(page.headers.get("Vary")).toBe("Accept");
    expect(page.text).toContain('<b id="log-size">3</b>');
    const escape = (s: string) => s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");
    expect(page.text).toContain(`<pre id="checkpoint">${escape(log.checkpoint)}</pre>`);
    expect(page.text).toContain(`<pre id="vkey">${escape(log.vkey)}</pre>`);
    expect(page.text).toContain(`npm run log:monitor -- ${BASE}/logs/${log.log_id} --vkey ${escape(log.vkey)}`);
    expect(page.text).toContain("Signed with the log&#39;s key below");
    expect(page.text).toContain("No independent witness has cosigned");

    for (const headers of [{}, { Accept: "*/*" }, { Accept: "application/json" }] as Array<Record<string, string>>) {
      const res = await call("GET", `/logs/${log.log_id}`, { headers });
      expect([res.status, res.headers.get("Content-Type"), res.text]).toEqual([404, "text/plain; charset=UTF-8", "not found\n"]);
    }
    // The C2SP paths under the address are untouched, whatever the client accepts.
    const checkpoint = await call("GET", `/logs/${log.log_id}/checkpoint`, { headers: BROWSER });
    expect([checkpoint.status, checkpoint.text]).toEqual([200, log.checkpoint]);

    const unknown = await call("GET", `/logs/${"0".repeat(32)}`, { headers: BROWSER });
    expect(unknown.status).toBe(404);
    expectStrictPage(unknown, false);
    expect(unknown.text).toContain("No such log");
  });

  it("lists cosignatures as text, hostile witness names included", () => {
    const name = '<img src=x onerror="alert(1)">';
    const html = logPage(
      {
        kind: "log", logId: "ab".repeat(16), origin: "example.test/logs/x", size: 7, rootHash: "AAAA", note: `example.test/logs/x\n7\nAAAA\n\n— ${name} AAAA\n`,
        vkey: "example.test/logs/x+01234567+AQID", signed: false,
        cosignatures: [{ name, keyId: "0a0b0c0d", at: "2026-03-14T09:12:03.000Z", verified: true }],
      },
      BASE,
    );
    expect(html).not.toContain("<img");
    expect(html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(html).toContain("14 March 2026 at 09:12:03 UTC");
    expect(html).toContain("Matches the configured witness key");
    expect(html).toContain("Signature does not match the log&#39;s key");
  });
});

describe("GET /receipts (check a receipt in the browser)", () => {
  it("is a shell that loads only the Worker's check script and may fetch only this origin", async () => {
    const res = await call("GET", "/receipts", { headers: BROWSER });
    expect(res.status).toBe(200);
    expectStrictPage(res, true);
    expect(res.headers.get("Content-Security-Policy")).toContain("connect-src 'self'");
    expect(res.text).toContain('<script src="/assets/public/check.js" defer=""></script>');
    expect(res.text).toContain('<textarea id="receipt-input"');
  });
});

describe("GET /receipts/<id> (the server's check)", () => {
  it("states each check's own result, failures in words, with the host and readable times", async () => {
    const p = await createProject();
    const ev = await ingestMany(p.key, Array.from({ length: 8 }, (_, i) => ({ action: `step.${i}`, actor: { id: "u_1", type: "user" } })));
    const page = async (e: { id: string }) => (await call("GET", `/receipts/${e.id}`, { headers: BROWSER })).text;

    const intact = await call("GET", `/receipts/${ev[1].id}`, { headers: BROWSER });
    expect(intact.status).toBe(200);
    expectStrictPage(intact, false);
    for (const text of ["Verified:", "Content matches its hash", "Signature matches", "Linked to the previous event", "Linked to the next event", "witness.test"]) {
      expect(intact.text).toContain(text);
    }
    expect(intact.text).not.toMatch(/class="check fail"/);
    expect(intact.text).toMatch(/<time datetime="[^"]+">\d{1,2} [A-Z][a-z]+ \d{4} at \d\d:\d\d:\d\d UTC<\/time>/);
    expect(intact.text).toContain(`<code class="iso">${ev[1].occurred_at}</code>`);

    // One tamper per check, each on its own event, so each page fails one check only.
    await onEveryShard("UPDATE events SET signature = 'v1:' || hex(randomblob(32)) WHERE id = ?", ev[1].id);
    await onEveryShard("UPDATE events SET action = 'edited' WHERE id = ?", ev[3].id);
    // A prev_hash rewritten: ev[7] no longer links back, and ev[6] no longer links forward.
    await onEveryShard("UPDATE events SET prev_hash = ? WHERE id = ?", "f".repeat(64), ev[7].id);
    const failures: Array<[number, string, string]> = [
      [1, "Signature", "Signature does not match"],
      [3, "Content", "Content does not match its hash"],
      [6, "Next event", "Link to the next event is broken"],
      [7, "Previous event", "Link to the previous event is broken"],
    ];
    for (const [i, what, text] of failures) {
      const html = await page(ev[i]);
      expect(html, what).toContain("Not verified:");
      expect(html, what).toMatch(new RegExp(`<li class="check fail" data-check="${what}">.*?<span class="result">${text}</span>`, "s"));
      if (what === "Signature" || what === "Next event") expect(html.match(/class="check fail"/g)?.length, what).toBe(1);
    }
  });

  it("notes a lawful erasure and still passes its checks; hostile text stays text", async () => {
    const p = await createProject();
    const evil = '"><script>alert(1)</script>';
    const e = (await ingest(p.key, { action: "doc.read", actor: { id: "u_gone", type: "user", name: "Ada" }, targets: [{ type: "doc", id: evil }] })).json.data;
    await ingest(p.key, { action: "after" });
    expect((await eraseApplied(p.key, "/v1/actors/u_gone")).status).toBe(202);
    const res = await call("GET", `/receipts/${e.id}`, { headers: BROWSER });
    expect(res.text).toContain("Verified:");
    expect(res.text).toMatch(/<p class="note" id="erasure">Personal data in this event was erased on \d{1,2} [A-Z][a-z]+ \d{4}/);
    expect(res.text).toContain("<em>erased</em>");
    expect(res.text).not.toContain("u_gone");
    expect(res.text).not.toContain("<script>");
    expect(res.text).toContain("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;");
  });
});
