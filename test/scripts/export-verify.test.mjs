// npm run export:verify against an evidence export the real worker wrote (wrangler's
// unstable_startWorker on a throwaway local database, its Workflows included), as a folder
// and as a zip of its files (what GET /v1/jobs/{id}/archive gives), and the same check as the
// dependency-free browser module in a Node that cannot load TypeScript. Run by npm run test:scripts.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { zipSync } from "fflate";
import { applyMigrations, createKey } from "../../src/scripts/lib.mjs";

const ROOT = new URL("../..", import.meta.url).pathname;
const run = promisify(execFile);
let dir;
let worker;
let base;
let apiKey;
let vkey;
let folder;
let jobId;

async function call(method, path, body) {
  const res = await worker.fetch(`${base}${path}`, {
    method,
    headers: { Authorization: `Bearer ${apiKey}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  assert.ok(res.ok, `${method} ${path}: ${res.status}`);
  return res;
}

/** npm run export:verify's exit code and output. */
async function exportVerify(target) {
  try {
    const { stdout } = await run(process.execPath, [join(ROOT, "src/scripts/export-verify.mjs"), target, "--vkey", vkey], { encoding: "utf8" });
    return { code: 0, out: stdout };
  } catch (error) {
    return { code: error.code, out: `${error.stdout}${error.stderr}` };
  }
}

let zips = 0;
/** A zip of a folder's files, as the archive endpoint gives them: at its root, or under `top`/. */
function zipOf(from, { top, extra = {} } = {}) {
  const files = Object.fromEntries(readdirSync(from).map((n) => [n, new Uint8Array(readFileSync(join(from, n)))]));
  const file = join(dir, `export-${++zips}.zip`);
  writeFileSync(file, zipSync({ ...(top ? { [top]: files } : files), ...extra }));
  return file;
}

function copy(change) {
  const target = mkdtempSync(join(dir, "copy-"));
  cpSync(folder, target, { recursive: true });
  change(target);
  return target;
}

describe("npm run export:verify", () => {
  before(async () => {
    process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";
    dir = mkdtempSync(join(tmpdir(), "witness-evidence-"));
    const state = join(dir, "state");
    applyMigrations({ persistTo: state });
    apiKey = createKey("evidence-cli", { persistTo: state }).key;
    const { unstable_startWorker } = await import("wrangler");
    worker = await unstable_startWorker({
      config: join(ROOT, "wrangler.toml"),
      bindings: {
        SIGNING_KEYS: { type: "plain_text", value: "1:evidence-signing-key" },
        EMBED_TOKEN_SECRET: { type: "plain_text", value: "evidence-secret-0123456789abcdef0123" },
        RECEIPT_SIGNING_KEYS: { type: "plain_text", value: `ev:${generateKeyPairSync("ed25519").privateKey.export({ format: "der", type: "pkcs8" }).toString("base64url")}` },
      },
      dev: { server: { hostname: "127.0.0.1", port: 0 }, inspector: false, persist: state, watch: false, logLevel: "error" },
    });
    base = (await worker.url).origin;
    const events = Array.from({ length: 25 }, (_, i) => ({ action: `doc.${i % 3}`, actor: { id: `u_${i % 4}`, email: `u${i % 4}@example.com` }, metadata: { i } }));
    await call("POST", "/v1/events/batch", { events });
    vkey = JSON.parse(await (await call("GET", "/v1/log")).text()).data.vkey;
    let job = JSON.parse(await (await call("POST", "/v1/jobs", { type: "export", format: "json", evidence: true, part_rows: 10 })).text()).data;
    for (let i = 0; i < 600 && !["succeeded", "failed", "canceled"].includes(job.status); i++) {
      await new Promise((r) => setTimeout(r, 100));
      job = JSON.parse(await (await call("GET", `/v1/jobs/${job.id}`)).text()).data;
    }
    assert.equal(job.status, "succeeded", JSON.stringify(job.error));
    jobId = job.id;
    folder = join(dir, "export");
    mkdirSync(folder);
    for (const f of job.files) writeFileSync(join(folder, f.name), new Uint8Array(await (await call("GET", f.url)).arrayBuffer()));
  });

  after(async () => {
    await worker?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it("exits 0 with one OK line for the files as written", async () => {
    const { code, out } = await exportVerify(folder);
    assert.equal(code, 0, out);
    assert.match(out, /^OK 25 events .* every event 1\.\.25 of the log/m);
  });

  it("exits 1 with a FAIL line for altered, reordered, truncated and padded copies", async () => {
    const cases = {
      altered: (t) => writeFileSync(join(t, "part-000002.json"), readFileSync(join(t, "part-000002.json"), "utf8").replace('"doc.', '"dox.')),
      reordered: (t) => {
        const a = readFileSync(join(t, "part-000001.json"));
        writeFileSync(join(t, "part-000001.json"), readFileSync(join(t, "part-000002.json")));
        writeFileSync(join(t, "part-000002.json"), a);
      },
      truncated: (t) => unlinkSync(join(t, "part-000003.json")),
      padded: (t) => writeFileSync(join(t, "part-000001.json"), Buffer.concat([readFileSync(join(t, "part-000001.json")), Buffer.from(" ")])),
      "no manifest": (t) => unlinkSync(join(t, "manifest.json")),
    };
    for (const [what, change] of Object.entries(cases)) {
      const { code, out } = await exportVerify(copy(change));
      assert.equal(code, 1, `${what}: ${out}`);
      assert.match(out, /^FAIL /m, what);
    }
    assert.equal((await exportVerify(join(dir, "nowhere"))).code, 2);
  });

  it("checks a zip of the files as it checks the folder: at its root or under one folder", async () => {
    const folderOut = (await exportVerify(folder)).out;
    for (const zip of [zipOf(folder), zipOf(folder, { top: "evidence-export" })]) {
      const { code, out } = await exportVerify(zip);
      assert.equal(code, 0, out);
      assert.equal(out, folderOut);
    }
  });

  it("checks the archive the service gives for the job (GET /v1/jobs/{id}/archive)", async () => {
    const zip = join(dir, "archive.zip");
    writeFileSync(zip, new Uint8Array(await (await call("GET", `/v1/jobs/${jobId}/archive`)).arrayBuffer()));
    assert.deepEqual(await exportVerify(zip), await exportVerify(folder));
  });

  it("fails a zip whose entry was altered, added or dropped with the folder's own FAIL line", async () => {
    const changes = [
      (t) => writeFileSync(join(t, "part-000002.json"), readFileSync(join(t, "part-000002.json"), "utf8").replace('"doc.', '"dox.')),
      (t) => writeFileSync(join(t, "notes.txt"), "added later"),
      (t) => unlinkSync(join(t, "part-000003.json")),
    ];
    for (const change of changes) {
      const changed = copy(change);
      const fromFolder = await exportVerify(changed);
      assert.equal(fromFolder.code, 1, fromFolder.out);
      assert.match(fromFolder.out, /^FAIL /);
      assert.deepEqual(await exportVerify(zipOf(changed)), fromFolder);
    }
  });

  it("fails a truncated, corrupted or escaping zip with one clear line, never a stack trace", async () => {
    const good = readFileSync(zipOf(folder));
    const cut = join(dir, "cut.zip");
    writeFileSync(cut, good.subarray(0, good.length - 100));
    // A flipped byte in the middle of a part's deflated data: its CRC-32 (or its deflate stream) gives it away.
    const flipped = join(dir, "flipped.zip");
    const bytes = Buffer.from(good);
    const at = bytes.indexOf("part-000002.json") + 200;
    bytes[at] ^= 0xff;
    writeFileSync(flipped, bytes);
    const cases = [
      [cut, /^FAIL \S+cut\.zip: it is not a zip archive, or it is cut short \(no end-of-archive record\)\n$/],
      [flipped, /^FAIL \S+flipped\.zip: its entry part-000002\.json is corrupt \(.+\)\n$/],
      [zipOf(folder, { extra: { "../evil.json": new Uint8Array([1]) } }), /^FAIL \S+\.zip: its entry "\.\.\/evil\.json" points outside the archive \(an absolute or "\.\." path\): refused\n$/],
      [zipOf(folder, { extra: { "/etc/evil.json": new Uint8Array([1]) } }), /^FAIL \S+\.zip: its entry "\/etc\/evil\.json" points outside the archive/],
      [join(folder, "manifest.json"), /^FAIL \S+manifest\.json: it is not a zip archive/],
    ];
    for (const [zip, line] of cases) {
      const { code, out } = await exportVerify(zip);
      assert.equal(code, 1, out);
      assert.match(out, line);
    }
  });

  it("gives the same verdicts as the browser module in a Node without TypeScript", async () => {
    const file = join(dir, "browser-check.mjs");
    const module = pathToFileURL(join(ROOT, "src/client/evidence-check.js")).href;
    writeFileSync(file, `
      import { readFileSync, readdirSync } from "node:fs";
      import { join } from "node:path";
      import { checkEvidence } from ${JSON.stringify(module)};
      const [folder, vkey] = process.argv.slice(2);
      const names = readdirSync(folder);
      const result = await checkEvidence({ manifest: readFileSync(join(folder, "manifest.json"), "utf8"), vkey, names,
        readFile: async (n) => names.includes(n) ? new Uint8Array(readFileSync(join(folder, n))) : null });
      console.log(JSON.stringify(result));
    `);
    const check = async (target) => JSON.parse((await run(process.execPath, ["--no-experimental-strip-types", file, target, vkey], { encoding: "utf8" })).stdout);
    assert.deepEqual(await check(folder), { ok: true, rows: 25, erased: 0, tree_size: 25, complete: true, gaps: 0, origin: vkey.split("+")[0], filters: {} });
    const altered = await check(copy((t) => writeFileSync(join(t, "part-000001.json"), readFileSync(join(t, "part-000001.json"), "utf8").replace('"doc.', '"dox.'))));
    assert.equal(altered.ok, false);
  });
});
