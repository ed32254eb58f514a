// The client as a stranger installs it: `npm pack` in src/client, the tarball
// installed (offline: it has no dependencies) into a scratch project, its types
// checked by TypeScript under nodenext, node16 and bundler resolution, and the
// installed code run against a local server that answers what a misconfigured
// proxy or a wrong address would. Run by npm run test:scripts.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";

const ROOT = new URL("../..", import.meta.url).pathname;
const CLIENT = join(ROOT, "src/client");
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");
const NAME = JSON.parse(readFileSync(join(CLIENT, "package.json"), "utf8")).name;
const run = promisify(execFile);

let dir;
let scratch; // the tarball installed
let linked; // the folder installed, as the README's first line does
let packed;

/** A command's exit code and output, without throwing on a non-zero exit. */
async function exec(file, args, cwd) {
  try {
    const { stdout, stderr } = await run(file, args, { cwd, encoding: "utf8", maxBuffer: 16 << 20 });
    return { code: 0, out: stdout + stderr };
  } catch (error) {
    return { code: error.code, out: String(error.stdout) + String(error.stderr) };
  }
}

const GOOD = `import { createClient, WitnessError, type ActionSchema, type ActionSummary, type AlertFiring, type AlertRule, type AlertRuleInput, type CatalogSettings, type Change, type Event, type FeedGap, type FeedPage, type OfflineCheck, type SchemaDetail } from "${NAME}";
const client = createClient({ baseUrl: "https://witness.example.com/v1", apiKey: "wtn_live_x" });
export async function catalog(): Promise<string | null> {
  const put: ActionSchema = await client.schemas.put("member.role.changed", { metadata: { type: "object" }, changes: { fields: ["role"] }, display: "{actor.id} changed a role" });
  const detail: SchemaDetail = await client.schemas.get(put.action);
  const old: ActionSchema = await client.schemas.version(put.action, detail.versions[0].version);
  for await (const schema of client.schemas.list({ limit: 10 })) if (schema.sha256 === old.sha256) break;
  const settings: CatalogSettings = await client.catalog.setSettings({ mode: "warn" });
  if ((await client.catalog.settings()).unknown_actions !== settings.unknown_actions) return null;
  for await (const action of client.actions.list({ prefix: "member.", limit: "50" })) {
    const summary: ActionSummary = action;
    if (summary.schema_version === null) return summary.first_seen;
  }
  const changes: Change[] = [{ field: "role", before: "viewer", after: "admin" }];
  const event = await client.events.create({ action: put.action, changes, version: old.version });
  return event.schema_valid === false ? String(event.schema_version) : event.display ?? event.changes?.[0]?.field ?? null;
}
export async function collect(saved: string | undefined, save: (cursor: string) => Promise<void>): Promise<number> {
  let seq = 0;
  const gaps: FeedGap[] = [];
  for await (const event of client.events.feed({ after: saved, limit: 500, actions: "invoice.paid,invoice.voided", onPage: async (page) => (gaps.push(...page.gaps), save(page.nextCursor)) })) seq = event.seq;
  for await (const event of client.events.feed({ since: "2026-01-01T00:00:00Z", follow: true, wait: 10, onPage: ({ at_head }) => void at_head })) if (event.seq > seq) break;
  const page: FeedPage = await client.events.feedPage({ after: saved, wait: "5" });
  return page.at_head ? seq : page.data.length + gaps.length;
}
export async function alerts(): Promise<string | null> {
  const input: AlertRuleInput = { name: "Admin granted", match: { actions: ["member.role.*"] }, threshold: { count: 3, window_seconds: 60, group_by: "actor_id" }, channels: [{ type: "webhook", url: "https://hooks.example.com/a" }] };
  const rule: AlertRule = await client.alerts.create(input);
  const secret: string | undefined = rule.channels[0].secret;
  const rules: AlertRule[] = await client.alerts.list();
  const updated = await client.alerts.update(rule.id, { enabled: false, channels: [{ type: "pagerduty", routing_key: "x", severity: "critical" }] });
  const test: AlertFiring = await client.alerts.test((await client.alerts.get(updated.id)).id);
  for await (const firing of client.alerts.firings(rule.id, { limit: 10 })) if (firing.deliveries[0]?.status === "failed") return firing.reason;
  await client.alerts.delete(rule.id);
  return rules.find((r) => r.kind === "integrity")?.name ?? secret ?? (test.test ? test.events[0]?.url ?? null : null);
}
export async function run(): Promise<string> {
  const event: Event = await client.events.create({ action: "invoice.paid", actor: { id: "u_1" } });
  const check: OfflineCheck = await client.receipts.verifyOffline(await client.receipts.get(event.id));
  try {
    for await (const listed of client.events.list({ limit: 10 })) return listed.action;
  } catch (error) {
    if (error instanceof WitnessError && error.code === "BAD_RESPONSE") return error.message;
  }
  return check.ok ? check.kid : check.reason;
}
`;

// Each line marked with its error: none of them would be reported if the types were any.
const BAD = `import { createClient, WitnessError } from "${NAME}";
const client = createClient({ baseUrl: "https://witness.example.com" });
export async function run(error: WitnessError) {
  await client.events.create({ action: 42 }); // TS2322
  const event = await client.events.get("id");
  if (error.code === "NO_SUCH_CODE") return 1; // TS2367
  await client.catalog.setSettings({ mode: "strict" }); // TS2322
  await client.schemas.put("a.b", { colour: "blue" }); // TS2353
  await client.events.create({ action: "a.b", changes: [{ before: 1 }] }); // TS2741
  await client.alerts.create({ name: "no channels key" }); // TS2345
  for await (const e of client.events.feed({ follow: "yes" })) void e; // TS2322
  return event.no_such_field; // TS2339
}
`;
const BAD_ERRORS = BAD.split("\n").flatMap((line, i) => (line.match(/\/\/ (TS\d+)$/) ? [`bad.ts(${i + 1},`, line.match(/TS\d+$/)[0]] : []));

const RESOLUTIONS = { nodenext: "nodenext", node16: "node16", bundler: "esnext" };

/** tsc on one file of a scratch project under one resolution; library .d.ts files checked too. */
function typecheck(resolution, file, project = scratch) {
  const config = join(project, `tsconfig.${resolution}.${file}.json`);
  const compilerOptions = {
    module: RESOLUTIONS[resolution],
    moduleResolution: resolution,
    target: "es2022",
    lib: ["es2022", "dom", "dom.asynciterable"],
    types: [],
    strict: true,
    noEmit: true,
    skipLibCheck: false,
    skipDefaultLibCheck: true,
  };
  writeFileSync(config, JSON.stringify({ compilerOptions, files: [file] }));
  return exec(process.execPath, [TSC, "-p", config, "--pretty", "false", "--listFiles"], project);
}

/** Each case a request to the local server; how the installed client ended it. */
async function runClient(server, cases, project = scratch) {
  const script = join(project, "run.mjs");
  writeFileSync(
    script,
    `import { createClient, WitnessError } from "${NAME}";
const results = [];
for (const { baseUrl, id } of ${JSON.stringify(cases)}) {
  const client = createClient({ baseUrl: ${JSON.stringify(server)} + baseUrl, apiKey: "k", retries: 1, sleep: async () => {} });
  try {
    results.push({ value: await client.events.get(id) });
  } catch (error) {
    results.push({ witness: error instanceof WitnessError, status: error.status, code: error.code, message: error.message, details: error.details });
  }
}
console.log(JSON.stringify(results));
`,
  );
  const { code, out } = await exec(process.execPath, [script], project);
  assert.equal(code, 0, out);
  return JSON.parse(out);
}

describe(`${NAME} installed from its packed tarball`, () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "witness-client-pack-"));
    const pack = await exec("npm", ["pack", "--json", "--pack-destination", dir], CLIENT);
    assert.equal(pack.code, 0, pack.out);
    [packed] = JSON.parse(pack.out.slice(pack.out.indexOf("[")));
    [scratch, linked] = [join(dir, "scratch"), join(dir, "linked")];
    await Promise.all(
      [[scratch, join(dir, packed.filename)], [linked, CLIENT]].map(async ([project, source]) => {
        mkdirSync(project);
        writeFileSync(join(project, "package.json"), JSON.stringify({ name: "scratch", private: true, type: "module" }));
        const install = await exec("npm", ["install", "--offline", "--no-audit", "--no-fund", source], project);
        assert.equal(install.code, 0, install.out);
        writeFileSync(join(project, "good.ts"), GOOD);
        writeFileSync(join(project, "bad.ts"), BAD);
      }),
    );
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("holds the client alone: no server code, no dependencies, every import inside the package", () => {
    const files = packed.files.map((f) => f.path).sort();
    for (const file of ["api-types.d.ts", "index.d.ts", "index.js", "openapi.json", "package.json", "receipt-check.js", "web-crypto.js"]) assert.ok(files.includes(file), `${file} in ${files}`);
    // Flat, JavaScript and declarations only: nothing from src/ beside the client, no .ts source.
    for (const file of files) assert.match(file, /^[\w-]+(\.d\.ts|\.js|\.json|\.md)$/, file);
    const installed = join(scratch, "node_modules", NAME);
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
    assert.equal(manifest.dependencies, undefined);
    assert.deepEqual(readdirSync(join(scratch, "node_modules")).filter((d) => d !== ".package-lock.json"), [NAME.split("/")[0]]);
    for (const file of files.filter((f) => /\.(js|d\.ts)$/.test(f))) {
      const text = readFileSync(join(installed, file), "utf8");
      for (const [, spec] of text.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)) {
        assert.ok(spec.startsWith("./") && files.includes(spec.slice(2).replace(/\.js$/, file.endsWith(".d.ts") ? ".d.ts" : ".js")), `${file} imports ${spec}`);
      }
    }
  });

  it("type-checks under nodenext, node16 and bundler, with real types (a type error is reported)", { timeout: 60_000 }, async () => {
    const runs = await Promise.all(Object.keys(RESOLUTIONS).map(async (r) => [r, await typecheck(r, "good.ts"), await typecheck(r, "bad.ts")]));
    for (const [resolution, good, bad] of runs) {
      assert.equal(good.code, 0, `${resolution}: ${good.out}`);
      // The types came from the installed package, api-types included, not from src/.
      assert.match(good.out, new RegExp(`node_modules/${NAME}/index\\.d\\.ts`), resolution);
      assert.match(good.out, new RegExp(`node_modules/${NAME}/api-types\\.d\\.ts`), resolution);
      assert.notEqual(bad.code, 0, `${resolution}: the deliberate type errors were not reported`);
      const errors = bad.out.split("\n").filter((line) => line.includes("error TS"));
      for (let i = 0; i < BAD_ERRORS.length; i += 2) {
        assert.ok(errors.some((e) => e.startsWith(BAD_ERRORS[i]) && e.includes(BAD_ERRORS[i + 1])), `${resolution}: no ${BAD_ERRORS[i + 1]} at ${BAD_ERRORS[i]}\n${bad.out}`);
      }
      assert.equal(errors.length, BAD_ERRORS.length / 2, `${resolution}: ${errors.join("\n")}`);
    }
    const fromFolder = await typecheck("nodenext", "good.ts", linked);
    assert.equal(fromFolder.code, 0, fromFolder.out);
    assert.match(fromFolder.out, /src\/client\/api-types\.d\.ts/);
  });

  it("throws WitnessError with a useful code for HTML, a 502 and a cut connection; reaches the API with or without /v1", async () => {
    const seen = [];
    const server = createServer((req, res) => {
      seen.push(req.url);
      const [, mode] = req.url.split("/");
      if (mode === "html") res.writeHead(200, { "Content-Type": "text/html" }).end("<!doctype html><title>Sign in</title>");
      else if (mode === "gateway") res.writeHead(502, { "Content-Type": "text/html" }).end("<html><h1>502 Bad Gateway</h1></html>");
      else if (mode === "cut") req.socket.destroy();
      else if (mode === "cut-body") {
        res.writeHead(200, { "Content-Type": "application/json", "Content-Length": "500" });
        res.write('{"data":{"id":');
        setImmediate(() => req.socket.destroy());
      } else if (req.url.startsWith("/api/v1/events/")) {
        res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ data: { id: req.url.split("/").pop() } }));
      } else res.writeHead(404, { "Content-Type": "application/json" }).end('{"error":{"code":"NOT_FOUND","message":"no route","details":{}}}');
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const [html, gateway, cut, cutBody, withV1, slashed, bare] = await runClient(`http://127.0.0.1:${server.address().port}`, [
        { baseUrl: "/html", id: "e1" },
        { baseUrl: "/gateway", id: "e2" },
        { baseUrl: "/cut", id: "e3" },
        { baseUrl: "/cut-body", id: "e4" },
        { baseUrl: "/api/v1", id: "e5" },
        { baseUrl: "/api/v1/", id: "e6" },
        { baseUrl: "/api", id: "e7" },
      ]);
      assert.deepEqual({ ...html, message: undefined }, { witness: true, status: 200, code: "BAD_RESPONSE", message: undefined, details: { content_type: "text/html", body: "<!doctype html><title>Sign in</title>" } });
      assert.match(html.message, /GET \/v1\/events\/e1 answered 200 \(text\/html\), not the Witness API's JSON/);
      assert.deepEqual([gateway.witness, gateway.status, gateway.code, gateway.details.content_type], [true, 502, "HTTP_ERROR", "text/html"]);
      assert.match(gateway.message, /answered 502 without the API's error envelope: <html><h1>502 Bad Gateway/);
      assert.deepEqual([cut.witness, cut.status, cut.code], [true, 0, "NETWORK_ERROR"]);
      assert.deepEqual([cutBody.witness, cutBody.status, cutBody.code], [true, 0, "NETWORK_ERROR"]);
      assert.match(cutBody.message, /answered 200, then the connection broke/);
      assert.deepEqual([withV1, slashed, bare], [{ value: { id: "e5" } }, { value: { id: "e6" } }, { value: { id: "e7" } }]);
      const [fromFolder] = await runClient(`http://127.0.0.1:${server.address().port}`, [{ baseUrl: "/api/v1", id: "e8" }], linked);
      assert.deepEqual(fromFolder, { value: { id: "e8" } });
      // A 502 and a cut are retried (retries: 1), an HTML success is not: it will not turn into the API.
      const count = (prefix) => seen.filter((url) => url.startsWith(prefix)).length;
      assert.deepEqual([count("/html/"), count("/gateway/"), count("/cut/"), count("/cut-body/")], [1, 2, 2, 2]);
      assert.deepEqual(seen.filter((url) => url.startsWith("/api")), ["/api/v1/events/e5", "/api/v1/events/e6", "/api/v1/events/e7", "/api/v1/events/e8"]);
    } finally {
      server.close();
    }
  });
});
