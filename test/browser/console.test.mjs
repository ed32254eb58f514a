import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { after, before, describe, it } from "node:test";
import { createServer } from "node:http";
import { tamperAction, tamperProject } from "./console-tamper.mjs";
import { API_KEY, expectAccessible, expectUnbroken, ingest, launchBrowser, screenshots, unique, WITNESS } from "./support.mjs";

const HOSTILE = `<img src=x onerror="window.__pwned=1">`;

let browser;
let page;
let tag;
let stored;

before(async () => {
  browser = await launchBrowser();
  tag = unique("console");
  stored = await ingest([
    { action: `${tag}.login`, actor: { id: "u1", name: HOSTILE } },
    { action: `${tag}.paid`, organization: "acme", metadata: { note: HOSTILE } },
    { action: `${tag}.login`, actor: { id: "u2", name: "Bo" } },
  ]);
  page = await browser.context.newPage();
  page.on("pageerror", (e) => assert.fail(`page error: ${e.message}`));
});

after(async () => {
  await browser?.close();
});

const accessible = (name) => expectAccessible(page, name);
// Every console page: whole at 360, 390 and 1280 px (no sideways scrolling, no wrapped badge or button), then screenshots at 390 and 1280.
const shoot = async (name) => {
  await expectUnbroken(page, name);
  await screenshots(page, `console-${name}`);
};

/** The verify's tally adds up: its lines before the "=" sum to the number after it. */
async function expectTallyAddsUp(list) {
  const lines = await list.locator("li").allTextContents();
  const number = (line) => Number(/^[+=]?\s*([\d,]+)/.exec(line)[1].replaceAll(",", ""));
  const sum = lines.findIndex((l) => l.startsWith("="));
  assert.ok(sum > 0, `a total line in ${JSON.stringify(lines)}`);
  assert.equal(lines.slice(0, sum).reduce((a, l) => a + number(l), 0), number(lines[sum]), lines.join(" | "));
  assert.ok(lines.some((l) => /with personal data erased/.test(l)) && lines.some((l) => /in retention gaps/.test(l)), "erased and purged leaves are named");
  return lines;
}

const actionsShown = () => page.locator("table.events a.action").allTextContents();

describe("the web console", () => {
  it("signs in with a key; the events page filters from the keyboard, charts from rollups, and loads little script", async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${WITNESS}/console`);
    assert.match(page.url(), /\/console\/sign-in$/);
    await accessible("sign-in");
    await shoot("sign-in");
    await page.getByLabel("API key").fill(API_KEY);
    await page.getByLabel("API key").press("Enter");
    await page.waitForURL(/\/console\/events$/);
    await page.locator("#activity-status").filter({ hasText: /^One bar per / }).waitFor();
    assert.equal(await page.locator("#activity-plot canvas").count(), 1);
    assert.match(await page.locator("#activity-caption").textContent(), /^[\d,]+ events? in the last 7 days; [\d,]+ recorded in the project in all\. Counts from hourly rollups/);
    // No uPlot legend (its "label:" with nothing after), but our own: each action with its count, a button that shows it alone.
    assert.equal(await page.locator(".u-legend").count(), 0);
    const legend = page.locator("#activity-legend button.series");
    const labels = await legend.locator(".name").allTextContents();
    assert.ok(labels.includes(`${tag}.login`), `legend: ${labels}`);
    const login = legend.filter({ has: page.locator(".name", { hasText: new RegExp(`^${tag}\\.login$`) }) });
    assert.equal(await login.locator(".n").textContent(), "2");
    await login.click();
    assert.equal(await login.getAttribute("aria-pressed"), "true");
    assert.equal(await page.locator("#activity").getAttribute("data-shown"), `${tag}.login`);
    assert.match(await page.locator("#activity-plot").getAttribute("aria-label"), new RegExp(`^Bar chart of 2 events, one bar per [^:]+: ${tag}\\.login 2$`));
    // From the keyboard too: the same button again shows every action.
    await login.focus();
    await page.keyboard.press("Enter");
    assert.equal(await login.getAttribute("aria-pressed"), "false");
    assert.equal((await page.locator("#activity").getAttribute("data-shown")).split("\n").length, labels.length);

    // At 390 px the filters fold behind one summary and the first event shows near the top.
    await page.setViewportSize({ width: 390, height: 900 });
    await page.reload();
    await page.locator("#activity-status").filter({ hasText: /^One bar per / }).waitFor();
    assert.equal(await page.locator("details#filters").evaluate((d) => d.open), false);
    assert.match(await page.locator("details#filters summary").textContent(), /^Filters \(none active\)$/);
    const firstRow = await page.locator("table.events tbody tr").first().evaluate((tr) => tr.getBoundingClientRect().top + scrollY);
    assert.ok(firstRow <= 700, `the first event starts ${Math.round(firstRow)} px down at 390 px`);
    await expectUnbroken(page, "events (390)", [390]);
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.reload();
    await page.locator("#activity-status").filter({ hasText: /^One bar per / }).waitFor();
    assert.equal(await page.locator("details#filters").evaluate((d) => d.open), true, "a wide screen shows the filters open");

    // Keyboard only: Tab to the exact-action filter, type, Enter; then Tab to the first row and open it.
    await page.locator("body").focus();
    for (let i = 0; i < 40 && (await page.evaluate(() => document.activeElement?.id)) !== "f-action"; i++) await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "f-action");
    await page.keyboard.type(`${tag}.login`);
    await page.keyboard.press("Enter");
    await page.waitForURL(/action=/);
    assert.deepEqual(await actionsShown(), [`${tag}.login`, `${tag}.login`]);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.equal(await page.getByText(HOSTILE).count(), 1, "hostile text shows as text");
    await accessible("events");
    await shoot("events");

    // Every script of the first load, compressed, stays under 150 KB.
    const scripts = await page.evaluate(() => [...document.scripts].map((s) => s.src).filter(Boolean));
    const sizes = await Promise.all(scripts.map(async (src) => gzipSync(Buffer.from(await (await fetch(src)).arrayBuffer())).length));
    assert.ok(sizes.reduce((a, b) => a + b, 0) < 150_000, `scripts: ${sizes}`);
    assert.ok(scripts.every((s) => s.startsWith(`${WITNESS}/console/assets/`)), "every script from the worker");

    // Still from the keyboard: one row a page, then the pager's next page, then open that row.
    await page.locator("#f-limit").focus();
    await page.keyboard.type("1");
    await page.keyboard.press("Enter");
    await page.waitForURL(/limit=1/);
    assert.deepEqual(await actionsShown(), [`${tag}.login`]);
    const focusedIs = (selector) => page.evaluate((sel) => document.activeElement?.matches(sel) ?? false, selector);
    for (let i = 0; i < 60 && !(await focusedIs("a[rel=next]")); i++) await page.keyboard.press("Tab");
    assert.ok(await focusedIs("a[rel=next]"), "the next-page link is reachable with Tab");
    await page.keyboard.press("Enter");
    await page.waitForURL(/cursor=/);
    assert.deepEqual(await actionsShown(), [`${tag}.login`]);
    await page.locator("body").focus();
    for (let i = 0; i < 60 && !(await focusedIs("a.action")); i++) await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.waitForURL(new RegExp(`/console/events/${stored[0].id}$`));
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
  });

  it("opens an event and checks its receipt and inclusion proof in this browser; a wrong proof turns red", async () => {
    await page.goto(`${WITNESS}/console/events/${stored[0].id}`);
    await page.locator("#proof[data-state]").waitFor();
    assert.equal(await page.locator("#proof").getAttribute("data-state"), "ok");
    assert.match(await page.locator("#proof-verdict").textContent(), /^Checked in this browser: this event is in the project's log \(leaf \d+ of \d+\) and unaltered\.$/);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    await accessible("event");
    await shoot("event");

  });

  it("starts an evidence export and checks its files in this browser: green, and red once a file is altered", async () => {
    await page.goto(`${WITNESS}/console/exports`);
    await page.getByLabel("Organization").fill("acme");
    await page.getByLabel(/^Evidence export/).check();
    await page.getByRole("button", { name: "Start export" }).click();
    await page.waitForURL(/\/console\/exports\?job=/);
    await page.locator(".job-watch[data-status]").waitFor({ timeout: 30_000 });
    assert.equal(await page.locator(".job-watch").getAttribute("data-status"), "succeeded");
    assert.ok(await page.locator('.job-watch a[download="manifest.json"]').count(), "an evidence export ends with manifest.json");
    const result = page.locator(".job-watch .evidence-result");
    await page.locator(".job-watch").getByRole("button", { name: "Check in this browser" }).click();
    await page.locator(".job-watch .evidence-result[data-state]").waitFor();
    assert.equal(await result.getAttribute("data-state"), "ok");
    assert.match(await result.textContent(), /^Checked in this browser: its 1 row recomputes to its hash and sits in the log's signed tree of [\d,]+ events; the export is filtered/);
    assert.equal(await result.evaluate((el) => getComputedStyle(el).borderColor), "rgb(46, 139, 74)");
    await accessible("exports-evidence");
    await shoot("exports-evidence");

    // A part altered on its way (one byte of its JSON): the browser's check says which and turns red.
    await page.route("**/console/api/v1/jobs/*/files/*", async (route) => {
      const res = await route.fetch();
      const body = await res.text();
      if (route.request().url().endsWith("/manifest.json")) return route.fulfill({ response: res, body });
      await route.fulfill({ response: res, body: body.replace(`${tag}.paid`, `${tag}.pais`) });
    });
    await page.reload();
    const row = page.locator("table tbody tr").first();
    await row.getByRole("button", { name: "Check in this browser" }).click();
    await row.locator(".evidence-result[data-state]").waitFor();
    assert.equal(await row.locator(".evidence-result").getAttribute("data-state"), "bad");
    assert.match(await row.locator(".evidence-result").textContent(), /^Check failed in this browser: \S+ is not the file the manifest names/);
    assert.equal(await row.locator(".evidence-result").evaluate((el) => getComputedStyle(el).borderColor), "rgb(192, 57, 43)");
    await page.unroute("**/console/api/v1/jobs/*/files/*");
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
  });

  it("creates a stream, pauses it (nothing delivered meanwhile) and resumes it without loss or duplicates", async () => {
    const received = [];
    const receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        received.push(...JSON.parse(body).events.map((e) => e.seq));
        res.writeHead(200).end("ok");
      });
    });
    await new Promise((r) => receiver.listen(8805, "127.0.0.1", r));
    const until = async (what, done) => {
      for (let i = 0; i < 150 && !done(); i++) await new Promise((r) => setTimeout(r, 200));
      assert.ok(done(), what);
    };
    try {
      await page.goto(`${WITNESS}/console/streams`);
      await page.getByLabel("URL").fill("http://127.0.0.1:8805/hook");
      await page.getByRole("button", { name: "Create stream" }).click();
      const id = await page.locator(".notice code").first().textContent();
      assert.match(id, /^str_/);
      const card = page.getByRole("region", { name: `Stream ${id}` });
      const first = await ingest([{ action: `${tag}.streamed` }, { action: `${tag}.streamed` }]);
      await until("the first events arrive", () => first.every((e) => received.includes(e.seq)));

      await card.getByRole("button", { name: "Pause delivery" }).click();
      await page.waitForURL(/\/console\/streams$/);
      assert.equal(await card.locator(".badge").textContent(), "paused");
      await accessible("streams-paused");
      await shoot("streams-paused");
      const during = await ingest([{ action: `${tag}.held` }, { action: `${tag}.held` }]);
      await new Promise((r) => setTimeout(r, 2500));
      assert.ok(during.every((e) => !received.includes(e.seq)), "nothing is delivered while paused");

      await card.getByRole("button", { name: "Resume delivery" }).click();
      await page.waitForURL(/\/console\/streams$/);
      assert.equal(await card.locator(".badge").textContent(), "active");
      await until("the held events arrive after resume", () => during.every((e) => received.includes(e.seq)));
      assert.equal(new Set(received).size, received.length, `no seq twice: ${received}`);
      assert.deepEqual(received, [...received].sort((a, b) => a - b), "in seq order");
      await card.getByRole("button", { name: "Delete stream" }).click();
      await page.waitForURL(/\/console\/streams$/);
      assert.equal(await page.getByRole("region", { name: `Stream ${id}` }).count(), 0);
    } finally {
      await new Promise((r) => receiver.close(r));
    }
  });

  it("runs a verify with a progress bar to its end, and every other page passes axe", async () => {
    await page.goto(`${WITNESS}/console/integrity`);
    assert.match(await page.locator("#monitor-command").textContent(), /^npm run log:monitor -- http:\/\/127\.0\.0\.1:\d+\/logs\/\S+ --vkey \S+$/);
    await page.getByRole("button", { name: "Run verify" }).click();
    await page.waitForURL(/\/console\/integrity\?job=/);
    await page.locator(".job-watch[data-status]").waitFor({ timeout: 30_000 });
    assert.equal(await page.locator(".job-watch").getAttribute("data-status"), "succeeded");
    const bar = await page.locator(".job-watch progress").evaluate((p) => [p.value, p.max]);
    assert.equal(bar[0], bar[1]);
    assert.match(await page.locator(".job-watch [role=status]").textContent(), /^Intact: (all [\d,]+ events in the signed tree accounted for|[\d,]+ events accounted for, against a signed tree of [\d,]+ events)\.$/);
    await expectTallyAddsUp(page.locator(".job-watch ul.tally"));
    // The past verifies' table says the same, from the server.
    await page.reload();
    await expectTallyAddsUp(page.locator("table.jobs tbody tr").first().locator("ul.tally"));
    await accessible("integrity");
    await shoot("integrity");
    await page.goto(`${WITNESS}/console/exports`);
    await page.getByLabel("Organization").fill("acme");
    await page.getByRole("button", { name: "Start export" }).click();
    await page.waitForURL(/\/console\/exports\?job=/);
    await page.locator(".job-watch[data-status]").waitFor({ timeout: 30_000 });
    assert.equal(await page.locator(".job-watch").getAttribute("data-status"), "succeeded");
    const link = page.locator(".job-watch a[download]").first();
    const csv = await page.evaluate(async (href) => (await fetch(href)).text(), await link.getAttribute("href"));
    assert.match(csv, new RegExp(`${tag}\\.paid`));
    assert.doesNotMatch(csv, new RegExp(`${tag}\\.login`));
    for (const name of ["exports", "streams", "retention", "keys", "alerts", "catalog", "no-such-page"]) {
      await page.goto(`${WITNESS}/console/${name}`);
      await page.locator("h1").waitFor();
      await accessible(name);
      await shoot(name);
    }
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/console\/sign-in\?ended=signed_out$/);
    assert.equal(await page.getByText("You are signed out.").count(), 1);
    await page.goto(`${WITNESS}/console/events`);
    assert.match(page.url(), /\/console\/sign-in$/);
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
  });

  it("a row tampered with in the database shows red in the event view, on its receipt page and in verify", async () => {
    // A project of its own: the shared one's chain must stay intact for the other tests.
    const key = tamperProject();
    const [kept, victim] = await ingest([{ action: `${tag}.approved` }, { action: `${tag}.paid` }, { action: `${tag}.shipped` }], key);
    await page.goto(`${WITNESS}/console/sign-in`);
    await page.getByLabel("API key").fill(key);
    await page.getByLabel("API key").press("Enter");
    await page.waitForURL(/\/console\/events$/);
    await page.goto(`${WITNESS}/console/events/${victim.id}`);
    await page.locator("#proof[data-state]").waitFor();
    assert.equal(await page.locator("#proof").getAttribute("data-state"), "ok");

    // A real tamper: the stored row changed in the dev server's own D1 file, behind the service's back.
    tamperAction(victim.id, `${tag}.refunded`);
    await page.goto(`${WITNESS}/console/events/${victim.id}`);
    assert.equal(await page.locator("h1").textContent(), `${tag}.refunded`);
    await page.locator("#proof[data-state]").waitFor();
    assert.equal(await page.locator("#proof").getAttribute("data-state"), "bad");
    assert.match(await page.locator("#proof-verdict").textContent(), /^Check failed in this browser: this event was altered after it was recorded\./);
    assert.equal(await page.locator("#proof").evaluate((el) => getComputedStyle(el).borderColor), "rgb(192, 57, 43)");
    await accessible("event-tampered");
    await shoot("event-tampered");

    // Its public receipt page, from the event page's link: the content check fails, in words and red.
    await page.getByRole("link", { name: "Public receipt page" }).click();
    await page.waitForURL(`${WITNESS}/receipts/${victim.id}`);
    assert.match(await page.locator(".verdict").textContent(), /^Not verified/);
    const content = page.locator("ul.checks li").first();
    assert.equal(await content.getAttribute("class"), "check fail");
    assert.match(await content.innerText(), /Content does not match its hash/);
    assert.equal(await content.evaluate((li) => getComputedStyle(li).backgroundColor), "rgb(255, 229, 232)");
    await accessible("receipt-tampered");
    await shoot("receipt-tampered");
    // The event before it is untouched and still checks out.
    await page.goto(`${WITNESS}/console/events/${kept.id}`);
    await page.locator("#proof[data-state]").waitFor();
    assert.equal(await page.locator("#proof").getAttribute("data-state"), "ok");

    // And a verify of the project names the altered event.
    await page.goto(`${WITNESS}/console/integrity`);
    await page.getByRole("button", { name: "Run verify" }).click();
    await page.locator(".job-watch[data-status]").waitFor({ timeout: 30_000 });
    assert.match(await page.locator(".job-watch [role=status]").textContent(), new RegExp(`^Failed: .* at event ${victim.id}\\.$`));
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
  });
});
