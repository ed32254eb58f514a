// The client's receipts.verifyOffline on a Node that cannot load TypeScript
// (--no-experimental-strip-types), as on Node 18 or a browser loading the file
// as is, against receipts issued by the real worker (wrangler's
// unstable_startWorker on a throwaway local database). Run by npm run test:scripts.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { generateKeyPairSync, sign } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { canonicalize } from "../../src/scripts/receipt-check.mjs";
import { applyMigrations, createKey } from "../../src/scripts/lib.mjs";

const ROOT = new URL("../..", import.meta.url).pathname;
const NO_TS = ["--no-experimental-strip-types"];
const receiptKey = generateKeyPairSync("ed25519").privateKey;

let dir;
let worker;
let base;
let apiKey;

/** Runs `code` (an ES module) in a child Node that cannot strip types; its stdout as JSON. */
async function inPlainNode(code) {
  const file = join(dir, `child-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(file, code);
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [...NO_TS, file], { encoding: "utf8" });
    return JSON.parse(stdout);
  } catch (error) {
    return { failed: true, stderr: String(error.stderr ?? error.message) };
  }
}

/** verifyOffline of each receipt in a child Node; keys omitted means fetched from the worker. */
async function verifyOffline(cases) {
  const client = pathToFileURL(join(ROOT, "src/client/index.js")).href;
  const out = await inPlainNode(`
    import { createClient } from ${JSON.stringify(client)};
    const client = createClient({ baseUrl: ${JSON.stringify(base)} });
    const cases = ${JSON.stringify(cases)};
    const results = [];
    for (const { receipt, keys } of cases) results.push(await client.receipts.verifyOffline(receipt, keys));
    console.log(JSON.stringify(results));
  `);
  assert.ok(!out.failed, out.stderr);
  return out;
}

async function call(method, path, body) {
  const res = await worker.fetch(`${base}${path}`, {
    method,
    headers: { Authorization: `Bearer ${apiKey}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`);
  return text;
}

/** Signs a receipt's fields as the worker does, so only what the test changed is wrong. */
function resign(receipt) {
  const { proof, ...body } = receipt;
  return { ...body, proof: { ...proof, value: sign(null, Buffer.from(canonicalize(body)), receiptKey).toString("base64url") } };
}

describe("receipts.verifyOffline without TypeScript support", () => {
  before(async () => {
    // No network here: miniflare's fetch of a Request.cf sample would only time out.
    process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";
    dir = mkdtempSync(join(tmpdir(), "witness-client-"));
    const state = join(dir, "state");
    applyMigrations({ persistTo: state });
    apiKey = createKey("client-offline", { persistTo: state }).key;
    const { unstable_startWorker } = await import("wrangler");
    worker = await unstable_startWorker({
      config: join(ROOT, "wrangler.toml"),
      bindings: {
        SIGNING_KEYS: { type: "plain_text", value: "1:client-offline-signing-key" },
        EMBED_TOKEN_SECRET: { type: "plain_text", value: "client-offline-secret-0123456789abcdef" },
        RECEIPT_SIGNING_KEYS: { type: "plain_text", value: `offline:${receiptKey.export({ format: "der", type: "pkcs8" }).toString("base64url")}` },
      },
      dev: { server: { hostname: "127.0.0.1", port: 0 }, inspector: false, persist: state, watch: false, logLevel: "error" },
    });
    base = (await worker.url).origin;
  });

  after(async () => {
    await worker?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("really cannot load .ts files, so the check below cannot lean on them", async () => {
    const direct = await inPlainNode(`await import(${JSON.stringify(pathToFileURL(join(ROOT, "src/scripts/receipt-check.mjs")).href)}); console.log("{}");`);
    assert.equal(direct.failed, true);
    assert.match(direct.stderr, /ERR_UNKNOWN_FILE_EXTENSION|Unknown file extension "\.ts"/);
  });

  it("passes a real receipt with its transparency log proof, and fails edited ones", { timeout: 120_000 }, async () => {
    const events = JSON.parse(await call("POST", "/v1/events/batch", { events: [1, 2, 3].map((n) => ({ action: `contract.signed.${n}`, actor: { id: `u${n}` } })) })).data;
    const event = events[1];
    const receiptText = await call("GET", `/v1/events/${event.id}/receipt`);
    const receipt = JSON.parse(receiptText).data;
    const keys = await call("GET", "/.well-known/witness-keys.json");
    assert.equal(typeof receipt.tlog_proof, "string", "the worker issued the receipt with its log proof");

    // A leaf hash in the inclusion proof flipped, and the receipt signed again over it:
    // only the bundled src/log code (Merkle inclusion, checkpoint note) can catch this.
    const lines = receipt.tlog_proof.split("\n");
    const hash = Buffer.from(lines[2], "base64");
    hash[0] ^= 1;
    lines[2] = hash.toString("base64");
    const badProof = resign({ ...receipt, tlog_proof: lines.join("\n") });

    const [envelope, fetchedKeys, edited, forged, wrongKey] = await verifyOffline([
      { receipt: JSON.parse(receiptText), keys },
      { receipt },
      { receipt: { ...receipt, action: "contract.voided" }, keys },
      { receipt: badProof, keys },
      { receipt, keys: `offline:${"A".repeat(43)}` },
    ]);
    const tlog = { ok: true, origin: envelope.tlog?.origin, index: event.seq - 1, tree_size: 3, kid: "offline" };
    assert.deepEqual(envelope, { ok: true, kid: "offline", tlog });
    assert.match(tlog.origin, /\S/);
    assert.deepEqual(fetchedKeys, envelope);
    assert.deepEqual(edited, { ok: false, reason: "the proof does not match the receipt's fields (edited, or another key)" });
    assert.equal(forged.ok, false);
    assert.match(forged.reason, /tlog_proof does not verify against the published keys/);
    assert.equal(wrongKey.ok, false);
  });

  it("fails a genuine receipt that says valid: false, and receipt text with a key given twice", { timeout: 120_000 }, async () => {
    const [event] = JSON.parse(await call("POST", "/v1/events/batch", { events: [{ action: "contract.signed", actor: { id: "u1" } }, { action: "x.y" }] })).data;
    const receiptText = await call("GET", `/v1/events/${event.id}/receipt`);
    const receipt = JSON.parse(receiptText).data;
    const keys = await call("GET", "/.well-known/witness-keys.json");
    // Signed with the worker's own receipt key: what Witness issues for a tampered event.
    const saysInvalid = resign({ ...receipt, valid: false });
    // JSON.parse keeps the last of duplicates, other readers the first: the proof checks
    // the last reading while a person could be shown "contract.voided" or valid: false.
    assert.ok(receiptText.startsWith('{"data":{') && receiptText.includes('"proof":{'), receiptText);
    const twice = (extra) => receiptText.replace('{"data":{', `{"data":{${extra},`);
    const duplicates = [
      twice('"action":"contract.voided"'),
      twice('"v\\u0061lid":false'),
      receiptText.replace('"proof":{', '"proof":{"kid":"someone-else",'),
      `{"data":${receiptText.slice('{"data":'.length, -1)},"data":${receiptText.slice('{"data":'.length, -1)}}`,
    ];
    for (const text of duplicates) assert.doesNotThrow(() => JSON.parse(text));

    const [invalid, asText, ...dup] = await verifyOffline([
      { receipt: saysInvalid, keys },
      { receipt: receiptText, keys },
      ...duplicates.map((text) => ({ receipt: text, keys })),
    ]);
    assert.equal(invalid.ok, false);
    assert.match(invalid.reason, /genuine .*valid: false/);
    assert.equal(asText.ok, true, JSON.stringify(asText));
    assert.deepEqual(
      dup.map((r) => r.reason),
      ["action", "valid", "kid", "data"].map((k) => `the receipt is not strict JSON (duplicate key "${k}")`),
    );

    // npm run receipt:verify reads the file strictly and fails valid: false too.
    const keysFile = join(dir, "keys.json");
    writeFileSync(keysFile, keys);
    const runVerify = async (text) => {
      const file = join(dir, `receipt-${Math.random().toString(36).slice(2)}.json`);
      writeFileSync(file, text);
      try {
        const { stdout } = await promisify(execFile)(process.execPath, [join(ROOT, "src/scripts/receipt-verify.mjs"), file, "--key", keysFile], { encoding: "utf8" });
        return { code: 0, stdout };
      } catch (error) {
        return { code: error.code, stdout: String(error.stdout) };
      }
    };
    assert.equal((await runVerify(receiptText)).code, 0);
    const cli = await Promise.all([JSON.stringify(saysInvalid), ...duplicates].map(runVerify));
    for (const [i, { code, stdout }] of cli.entries()) {
      assert.equal(code, 1, stdout);
      assert.match(stdout, i === 0 ? /^INVALID: the receipt is genuine/ : /^INVALID: the receipt is not strict JSON \(duplicate key/);
    }
  });
});
