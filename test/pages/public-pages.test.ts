import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { wantsHtml } from "../../src/pages/public/negotiate";
import { logPage } from "../../src/pages/public/log-page";
import { BROWSER_CHECKS, receiptPage } from "../../src/pages/public/receipt-page";
import { checkReceiptPage } from "../../src/pages/public/receipt-view-check.js";
import { parsePublicKeys } from "../../src/scripts/receipt-check.mjs";
import { loadReceiptKeys, signReceipt } from "../../src/sealing/receipt-signing";
import { base64Decode, base64Encode } from "../../src/tlog/encoding";
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

/** Text as the browser reads it back from the page (hono escapes & < > " and '). */
const unescapeHtml = (s: string) => s.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&quot;", '"').replaceAll("&#39;", "'").replaceAll("&amp;", "&");

/** The signed receipt a receipt page carries for the browser, as its script reads it. */
function pageReceipt(html: string): string {
  const m = /<pre id="signed-receipt">([^<]*)<\/pre>/.exec(html);
  expect(m, "the page carries a signed receipt").not.toBeNull();
  return unescapeHtml(m![1]);
}

/** What the page shows of the fields the receipt signs, as the script collects them. */
function shownOn(html: string): Record<string, string> {
  const shown: Record<string, string> = {};
  for (const m of html.matchAll(/data-signed="([a-z_]+)">([^<]*)</g)) shown[m[1]] = m[1] === "seq" ? m[2].replace(/^#/, "") : unescapeHtml(m[2]);
  shown.valid = String(/data-server="valid"/.test(html));
  return shown;
}

const publishedKeys = async () => parsePublicKeys((await call("GET", "/.well-known/witness-keys.json")).text);

describe("GET /receipts/<id> (the server's check)", () => {
  it("states each check's own result, failures in words, with the host and readable times", async () => {
    const p = await createProject();
    const ev = await ingestMany(p.key, Array.from({ length: 8 }, (_, i) => ({ action: `step.${i}`, actor: { id: "u_1", type: "user" } })));
    const page = async (e: { id: string }) => (await call("GET", `/receipts/${e.id}`, { headers: BROWSER })).text;

    const intact = await call("GET", `/receipts/${ev[1].id}`, { headers: BROWSER });
    expect(intact.status).toBe(200);
    expectStrictPage(intact, true);
    for (const text of ["Verified by the server:", "Content matches its hash", "Signature matches", "Linked to the previous event", "Linked to the next event", "witness.test"]) {
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
      expect(html, what).toContain("Not verified: the server found");
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
    expect(res.text).toContain("Verified by the server:");
    expect(res.text).toMatch(/<p class="note" id="erasure">Personal data in this event was erased on \d{1,2} [A-Z][a-z]+ \d{4}/);
    expect(res.text).toContain("<em>erased</em>");
    expect(res.text).not.toContain("u_gone");
    expect(res.text).not.toContain("<script>");
    expect(res.text).toContain("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;");
  });
});

describe("GET /receipts/<id> (checked in the reader's browser too)", () => {
  it("says which checks ran where, loads the check script, and carries a signed receipt that verifies", async () => {
    const p = await createProject();
    const [, event] = await ingestMany(p.key, [{ action: "order.placed" }, { action: "order.shipped" }, { action: "order.paid" }]);
    const res = await call("GET", `/receipts/${event.id}`, { headers: BROWSER });
    expect(res.status).toBe(200);
    expectStrictPage(res, true);
    // The script fetches the published keys, from this origin only.
    expect(res.headers.get("Content-Security-Policy")).toContain("connect-src 'self'");
    expect(res.text).toContain('<script src="/assets/public/check.js" defer=""></script>');
    // One verdict, claiming only the server's checks until the browser has run its own.
    expect(res.text.match(/class="verdict/g)).toHaveLength(1);
    expect(res.text).toMatch(/<p id="verdict" class="verdict ok" role="status" data-server="valid"><span id="verdict-server">Verified by the server: [^<]+<\/span> <span id="verdict-browser">Your browser has not checked this receipt.<\/span><\/p>/);
    expect(res.text).toContain('<h2 id="checks-h">Checked by the server</h2>');
    expect(res.text).toContain('<h2 id="browser-h">Checked in your browser</h2>');
    for (const what of BROWSER_CHECKS) {
      expect(res.text).toMatch(new RegExp(`<li class="check skip" data-check="${what}">.*?<span class="result">Not checked: this needs JavaScript</span>`, "s"));
    }
    expect(res.text).toMatch(/<noscript><p class="note">JavaScript is off, so your browser has not checked this receipt: the verdict above is the server&#39;s word alone\./);

    // What the script checks: the receipt GET /v1/events/:id/receipt signs, with its log proof, matching the page.
    const text = pageReceipt(res.text);
    const receipt = JSON.parse(text);
    const api = (await call("GET", `/v1/events/${event.id}/receipt`, { key: p.key })).json.data;
    const { issued_at: _a, proof: _b, ...same } = api;
    expect(receipt).toMatchObject(same);
    expect(receipt.tlog_proof).toMatch(/^c2sp.org\/tlog-proof@v1\n/);
    const shown = shownOn(res.text);
    expect(shown).toEqual({ event_id: event.id, action: "order.shipped", seq: String(event.seq), hash: event.hash, valid: "true" });
    const log = (await call("GET", "/v1/log", { key: p.key })).json.data;
    const result = await checkReceiptPage(text, await publishedKeys(), shown);
    expect(result).toMatchObject({
      outcome: "verified",
      signature: { state: "pass", kid: "test-2" },
      checkpoint: { state: "pass", origin: log.origin, treeSize: 3, kid: "test-2" },
      inclusion: { state: "pass", index: 1, treeSize: 3 },
      page: { state: "pass" },
    });
  });

  it("the browser finds a stored hash that is not the one in the log, and a page showing other values than it signed", async () => {
    const p = await createProject();
    const ev = await ingestMany(p.key, [{ action: "a" }, { action: "b" }, { action: "c" }, { action: "d" }, { action: "e" }]);
    // A database writer changes the event's hash: the server's checks fail, and the log proof no longer covers it.
    await onEveryShard("UPDATE events SET hash = ? WHERE id = ?", "ab".repeat(32), ev[1].id);
    const res = await call("GET", `/receipts/${ev[1].id}`, { headers: BROWSER });
    expect(res.text).toContain("Not verified: the server found");
    const shown = shownOn(res.text);
    expect(shown.valid).toBe("false");
    const keys = await publishedKeys();
    const result = await checkReceiptPage(pageReceipt(res.text), keys, shown);
    expect(result).toMatchObject({
      outcome: "failed",
      signature: { state: "pass" },
      checkpoint: { state: "pass" },
      inclusion: { state: "fail", reason: "inclusion proof does not match the checkpoint root" },
      page: { state: "pass" },
    });

    // A page that shows another action, or says verified, than the receipt it carries signs (ev[4] is far from the tamper).
    const intact = await call("GET", `/receipts/${ev[4].id}`, { headers: BROWSER });
    const text = pageReceipt(intact.text);
    for (const [change, fields] of [[{ action: "e.approved" }, ["action"]], [{ valid: "false" }, ["valid"]], [{ seq: "2", hash: ev[1].hash }, ["seq", "hash"]]] as const) {
      const lie = await checkReceiptPage(text, keys, { ...shownOn(intact.text), ...change });
      expect(lie, JSON.stringify(change)).toMatchObject({ outcome: "failed", signature: { state: "pass" }, inclusion: { state: "pass" }, page: { state: "fail", fields } });
    }
    const { action: _, ...partial } = shownOn(intact.text);
    expect(await checkReceiptPage(text, keys, partial)).toMatchObject({ outcome: "failed", page: { state: "fail", fields: ["action"], missing: true } });
  });

  it("names the check that fails for an edited receipt, a bad proof under a good signature, and no proof yet", async () => {
    const p = await createProject();
    const ev = await ingestMany(p.key, Array.from({ length: 5 }, (_, i) => ({ action: `s.${i}` })));
    const res = await call("GET", `/receipts/${ev[2].id}`, { headers: BROWSER });
    const text = pageReceipt(res.text);
    const receipt = JSON.parse(text);
    const shown = shownOn(res.text);
    const keys = await publishedKeys();
    const skipped = { state: "skip", why: "the receipt's signature did not verify" };

    // Edited after signing: the signature fails and nothing after it is claimed.
    const edited = await checkReceiptPage(JSON.stringify({ ...receipt, action: "s.9" }), keys, { ...shown, action: "s.9" });
    expect(edited).toEqual({
      receipt: { ...receipt, action: "s.9" },
      outcome: "failed",
      signature: { state: "fail", reason: "the proof does not match the receipt's fields (edited, or another key)" },
      checkpoint: skipped,
      inclusion: skipped,
      page: skipped,
    });
    expect((await checkReceiptPage("<html>not json", keys, shown)).signature).toMatchObject({ state: "fail", reason: expect.stringContaining("not strict JSON") });
    expect((await checkReceiptPage(text, keys.filter((k) => k.kid !== "test-2"), shown)).signature).toEqual({ state: "fail", reason: "no public key with id test-2 was given" });

    // Signed by the service's key, but over a proof that does not hold: the signature passes, the log check names the failure.
    const ring = await loadReceiptKeys(env.RECEIPT_SIGNING_KEYS);
    const resign = async (body: Record<string, unknown>) => {
      const { proof: _, ...rest } = { ...receipt, ...body };
      return JSON.stringify(await signReceipt(ring, rest));
    };
    const lines: string[] = receipt.tlog_proof.split("\n");
    const flip = (i: number) => {
      const copy = [...lines];
      const bytes = base64Decode(copy[i].split(" ").at(-1)!);
      bytes[bytes.length - 1] ^= 1;
      copy[i] = [...copy[i].split(" ").slice(0, -1), base64Encode(bytes)].join(" ");
      return copy.join("\n");
    };
    const proofHash = await checkReceiptPage(await resign({ tlog_proof: flip(2) }), keys, shown);
    expect(proofHash).toMatchObject({ outcome: "failed", signature: { state: "pass" }, checkpoint: { state: "pass" }, inclusion: { state: "fail", reason: "inclusion proof does not match the checkpoint root" } });
    const signatureLine = lines.findIndex((l) => l.startsWith("\u2014 "));
    const checkpoint = await checkReceiptPage(await resign({ tlog_proof: flip(signatureLine) }), keys, shown);
    expect(checkpoint).toMatchObject({
      outcome: "failed",
      checkpoint: { state: "fail", reason: expect.stringMatching(/^invalid signature for key /) },
      inclusion: { state: "skip", why: "the checkpoint's signature did not verify" },
      page: { state: "pass" },
    });
    const wrongLeaf = await checkReceiptPage(await resign({ seq: 2 }), keys, { ...shown, seq: "2" });
    expect(wrongLeaf.inclusion).toEqual({ state: "fail", reason: "tlog_proof is for leaf 2, the event is leaf 1" });
    const unreadable = await checkReceiptPage(await resign({ tlog_proof: "c2sp.org/tlog-proof@v1\nnonsense" }), keys, shown);
    expect(unreadable).toMatchObject({ outcome: "failed", checkpoint: { state: "fail", reason: expect.stringMatching(/^tlog_proof is malformed/) }, inclusion: { state: "skip" } });

    // No log proof yet: the signature is all the browser can claim.
    const none = await checkReceiptPage(await resign({ tlog_proof: null }), keys, shown);
    expect(none).toMatchObject({ outcome: "partial", signature: { state: "pass" }, checkpoint: { state: "skip" }, inclusion: { state: "skip" }, page: { state: "pass" } });
  });

  it("renders hostile values as text, the carried receipt included, and offers no script without a receipt", () => {
    const evil = '</pre><script>alert(1)</script><img src=x onerror="alert(2)">';
    const props = {
      fields: { event_id: "e_1", action: evil, actor: { type: "user", id: evil }, target: { type: evil, id: "t" }, occurred_at: "2026-03-14T09:12:03.000Z", seq: 4, hash: "ab".repeat(32), prev_hash: null },
      check: { hash: true, signature: true, predecessor_link: true, successor_link: true },
      valid: true,
      checkedAt: "2026-03-14T10:00:00.000Z",
      jsonUrl: `${BASE}/v1/receipts/e_1`,
      host: "witness.test",
      anonymizedAt: null,
    };
    const receipt = { type: "witness.receipt.v1", event_id: "e_1", action: evil, note: "it's & <b>" };
    const html = receiptPage({ ...props, receipt });
    expect(html).not.toMatch(/<script>|<img|<\/pre><script/);
    expect(pageReceipt(html)).toBe(JSON.stringify(receipt, null, 2));
    expect(shownOn(html)).toMatchObject({ action: evil, event_id: "e_1", seq: "4", valid: "true" });
    expect(html).toContain('<script src="/assets/public/check.js" defer=""></script>');

    const unsigned = receiptPage({ ...props, receipt: null });
    expect(unsigned).not.toContain("<script");
    expect(unsigned).not.toContain("signed-receipt");
    expect(unsigned).toContain("This service signs no receipts, so your browser has nothing to check.");
  });
});
