// The operator scripts, run as an operator runs them (node, outside workerd):
// npm run test:scripts. The key commands run against a throwaway copy of the
// project (its own .wrangler state), never the checkout's local database.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { DatabaseSync } from "node:sqlite";
import { devPort, parseKeyReference, wranglerDevArgs } from "../../src/scripts/lib.mjs";
import { d1FileName, splitStatements } from "../../src/scripts/local-d1.mjs";
import { idTag, tagSuffix } from "../../src/model/event-id.ts";
import { searchTag } from "../../src/model/search-index.ts";
import { KEY_SPAN, keyedRowId, OLDER_TOP } from "../../src/model/row-keys.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

function run(root, script, args = [], env = {}) {
  const res = spawnSync(process.execPath, [join(root, "src", "scripts", script), ...args], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", ...env },
  });
  return { code: res.status, out: res.stdout, err: res.stderr };
}

describe("helpers", () => {
  it("reads a key given whole, after wtn_live_, or as its prefix", () => {
    const secret = "s".repeat(32);
    assert.deepEqual(parseKeyReference(`wtn_live_AbCdEfGh1234_${secret}`), { prefix: "AbCdEfGh1234", secret });
    assert.deepEqual(parseKeyReference(`AbCdEfGh1234_${secret}`), { prefix: "AbCdEfGh1234", secret });
    assert.deepEqual(parseKeyReference(" AbCdEfGh1234 "), { prefix: "AbCdEfGh1234", secret: null });
    for (const bad of ["", "wtn_live_", "abc", "AbCdEfGh1234_short", "x'; DROP TABLE api_keys; --", `wtn_test_AbCdEfGh1234_${secret}`]) {
      assert.equal(parseKeyReference(bad), null, bad);
    }
  });

  it("finds the port wrangler dev is given, in either form", () => {
    assert.equal(devPort([]), "8787");
    assert.equal(devPort(["--port", "9000"]), "9000");
    assert.equal(devPort(["--port=9001"]), "9001");
    assert.equal(devPort(["--var", "A:b", "--port=9002", "--local"]), "9002");
  });

  it("names the dev logs after the port npm run dev listens on, unless LOG_ORIGIN_HOST is given", () => {
    const vars = (args) => wranglerDevArgs(args).flatMap((a, i, all) => (all[i - 1] === "--var" ? [a] : []));
    assert.deepEqual(vars([]), ["LOG_ORIGIN_HOST:localhost:8787", "EMBED_DEMO_PROJECT:demo", "ALLOW_PRIVATE_STREAM_TARGETS:true"]);
    assert.ok(vars(["--port", "9000"]).includes("LOG_ORIGIN_HOST:localhost:9000"));
    assert.ok(vars(["--port=9001"]).includes("LOG_ORIGIN_HOST:localhost:9001"));
    assert.deepEqual(vars(["--var", "LOG_ORIGIN_HOST:audit.test", "--port", "9000"]).filter((v) => v.startsWith("LOG_ORIGIN_HOST")), ["LOG_ORIGIN_HOST:audit.test"]);
  });

  it("splits SQL at semicolons outside quotes and comments, as wrangler d1 execute --command does", () => {
    assert.deepEqual(splitStatements("SELECT 1; INSERT INTO t VALUES ('a;b', \"c;d\"); -- x;y\nSELECT 'it''s;';"), [
      "SELECT 1",
      "INSERT INTO t VALUES ('a;b', \"c;d\")",
      "-- x;y\nSELECT 'it''s;'",
    ]);
  });
});

describe("bad input: a clear message and a non-zero exit, before touching any database", () => {
  const cases = [
    ["keys-create.mjs", [], /usage: npm run keys:create -- <project>/],
    ["keys-create.mjs", ["bad project!"], /a project id is 1-64 letters/],
    ["keys-create.mjs", ["p", "--force"], /unknown option --force/],
    ["keys-list.mjs", [], /usage: npm run keys:list -- <project>/],
    ["keys-revoke.mjs", [], /usage: npm run keys:revoke -- <key>/],
    ["keys-revoke.mjs", ["not a key"], /is not a Witness API key or key prefix/],
    ["projects-list.mjs", ["extra"], /unexpected argument extra/],
    ["projects-retention.mjs", [], /usage: npm run projects:retention/],
    ["projects-reindex.mjs", [], /usage: npm run projects:reindex/],
    ["projects-reindex.mjs", ["p", "q"], /usage: npm run projects:reindex/],
    ["projects-retention.mjs", ["p", "--url"], /--url needs a value/],
    ["projects-retention.mjs", ["p", "--url", "ftp://x"], /not an http\(s\) address/],
    ["projects-retention.mjs", ["p", "--remote"], /--remote needs --url/],
    ["projects-limits.mjs", [], /usage: npm run projects:limits/],
    ["projects-limits.mjs", ["p", "500"], /from 1,200 \(the spec's 1,200 requests a minute of one key\)/],
    ["projects-limits.mjs", ["p", "fast"], /whole number/],
  ];
  for (const [script, args, message] of cases) {
    it(`${script} ${args.join(" ") || "(no arguments)"}`, () => {
      const res = run(ROOT, script, args, { WITNESS_URL: "" });
      assert.notEqual(res.code, 0);
      assert.match(res.err, message);
    });
  }

  // One line naming the bad value, exit 2 like any usage error.
  const oneLine = [
    [["p", "--scope", "ingest,superuser"], /^error: unknown scope "superuser": scopes are ingest, read, admin, comma-separated$/],
    [["p", "--scope=read,,admin"], /^error: unknown scope "": scopes are ingest, read, admin/],
    [["p", "--label", "x".repeat(101)], /^error: --label is at most 100 characters \(got 101\)$/],
    [["p", "--label", "  "], /^error: --label must not be empty$/],
  ];
  for (const [args, message] of oneLine) {
    it(`keys-create.mjs ${args.join(" ").slice(0, 60)}: exit 2, one line`, () => {
      const res = run(ROOT, "keys-create.mjs", args);
      assert.equal(res.code, 2, res.err);
      assert.equal(res.err.trimEnd().split("\n").length, 1, res.err);
      assert.match(res.err.trimEnd(), message);
    });
  }

  it("prints the usage on --help with exit 0", () => {
    const res = run(ROOT, "keys-revoke.mjs", ["--help"]);
    assert.equal(res.code, 0);
    assert.match(res.out, /the whole key \(wtn_live_<prefix>_<secret>\), the part after wtn_live_, or the prefix/);
  });
});

describe("keys against a local database", () => {
  let root;
  before(() => {
    root = mkdtempSync(join(tmpdir(), "witness-scripts-"));
    for (const entry of ["src", "migrations", "wrangler.toml", "package.json"]) cpSync(join(ROOT, entry), join(root, entry), { recursive: true });
    symlinkSync(join(ROOT, "node_modules"), join(root, "node_modules"));
  });
  after(() => rmSync(root, { recursive: true, force: true }));
  /** The control database's SQLite file, as wrangler created it (the scripts open it directly). */
  const controlDb = () => join(root, ".wrangler", "state", "v3", "d1", "miniflare-D1DatabaseObject", d1FileName("00000000-0000-0000-0000-000000000000"));
  /** The SQLite file of a project's shard (shard 0 is the control database's file). */
  const shardFileOf = (project) => {
    const control = new DatabaseSync(controlDb());
    const { shard } = control.prepare("SELECT shard FROM projects WHERE id = ?").get(project);
    control.close();
    return shard === 0 ? controlDb() : join(root, ".wrangler", "state", "v3", "d1", "miniflare-D1DatabaseObject", d1FileName("00000000-0000-0000-0000-000000000001"));
  };
  /**
   * A project keys-create.mjs made, put on the seq index as projects made before keyed row ids are
   * (src/model/row-keys.ts): for tests that write its rows by hand as the ledger wrote them then.
   */
  const olderLayout = (db, project) => db.prepare("DELETE FROM project_keys WHERE project_id = ?").run(project);

  it("creates, lists (never the secret), and revokes by whole key, by the part after wtn_live_ and by prefix; twice says so", { timeout: 240_000 }, () => {
    const create = () => {
      const res = run(root, "keys-create.mjs", ["ops-test"]);
      assert.equal(res.code, 0, res.err);
      const key = res.out.trim().split("\n").pop();
      assert.match(key, /^wtn_live_[A-Za-z0-9]{12}_[A-Za-z0-9]{32}$/);
      return { key, prefix: key.split("_")[2], secret: key.split("_")[3] };
    };
    const a = create();
    const b = create();
    const c = create();

    const list = run(root, "keys-list.mjs", ["ops-test"]);
    assert.equal(list.code, 0, list.err);
    for (const k of [a, b, c]) {
      assert.match(list.out, new RegExp(`${k.prefix}\\s+(admin|ingest)\\s+\\d{4}-\\d{2}-\\d{2}T\\S+\\s+never\\s+-\\s+-$`, "m"));
      assert.ok(!list.out.includes(k.secret), "a secret was printed");
    }

    assert.match(run(root, "keys-revoke.mjs", [a.key]).out, new RegExp(`Revoked key ${a.prefix} of project ops-test`));
    assert.match(run(root, "keys-revoke.mjs", [b.key.slice("wtn_live_".length)]).out, new RegExp(`Revoked key ${b.prefix}`));
    assert.match(run(root, "keys-revoke.mjs", [c.prefix]).out, new RegExp(`Revoked key ${c.prefix}`));
    const again = run(root, "keys-revoke.mjs", [a.key]);
    assert.equal(again.code, 0);
    assert.match(again.out, new RegExp(`Key ${a.prefix} of project ops-test was already revoked \\(at .+\\); nothing changed`));

    const wrong = run(root, "keys-revoke.mjs", [`${a.prefix}_${"x".repeat(32)}`]);
    assert.equal(wrong.code, 1);
    assert.match(wrong.err, /the secret does not match key/);
    const unknown = run(root, "keys-revoke.mjs", ["ZZZZZZZZZZZZ"]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /no key with prefix ZZZZZZZZZZZZ/);

    const revoked = run(root, "keys-list.mjs", ["ops-test"]);
    assert.match(revoked.out, /Project ops-test: 3 key\(s\), 0 live/);

    const projects = run(root, "projects-list.mjs");
    assert.equal(projects.code, 0, projects.err);
    assert.match(projects.out, /^project\s+shard\s+events\s+head seq\s+keys \(live\)\s+retention\s+created$/m);
    assert.match(projects.out, /^ops-test\s+\d+\s+0\s+-\s+3 \(0\)\s+keep forever\s+\d{4}-\d{2}-\d{2}$/m);
  });

  it("reads and writes the local database directly once it exists: no wrangler start, a fraction of a second each, nothing on stderr", () => {
    // The file the scripts compute is the one wrangler made (miniflare names it by a hash of the database id).
    assert.ok(existsSync(controlDb()), "no local database where the scripts look for it");
    const started = Date.now();
    const steps = [
      run(root, "keys-create.mjs", ["fast-test", "--label", "speed; 'quoted'"]),
      run(root, "keys-list.mjs", ["fast-test"]),
      run(root, "projects-list.mjs"),
      run(root, "projects-tiering.mjs", ["fast-test", "30"]),
    ];
    const seconds = (Date.now() - started) / 1000;
    for (const res of steps) {
      assert.equal(res.code, 0, res.err);
      assert.equal(res.err, "", "a warning reached the operator");
    }
    assert.match(steps[1].out, /fast-test: 1 key\(s\), 1 live[\s\S]*speed; 'quoted'$/m);
    // Through wrangler these four took 12-20 s (a wrangler start per query).
    assert.ok(seconds < 4, `took ${seconds} s`);
    assert.equal(run(root, "keys-revoke.mjs", [steps[0].out.trim().split("\n").pop()]).code, 0);
  });

  it("waits for a write the running service holds instead of failing (busy timeout)", { timeout: 60_000 }, async () => {
    // Another connection holds the write lock for a second, as wrangler dev does mid-transaction.
    const holder = spawn(process.execPath, ["-e", `
      const db = new (require("node:sqlite").DatabaseSync)(${JSON.stringify(controlDb())});
      db.exec("BEGIN IMMEDIATE"); console.log("locked");
      setTimeout(() => { db.exec("COMMIT"); }, 1000);`], { stdio: ["ignore", "pipe", "ignore"] });
    await new Promise((resolve) => holder.stdout.once("data", resolve));
    const res = await new Promise((resolve) => {
      const child = spawn(process.execPath, [join(root, "src", "scripts", "keys-create.mjs"), "busy-test"], { cwd: root, env: { ...process.env, WRANGLER_SEND_METRICS: "false" } });
      let out = "";
      let err = "";
      child.stdout.on("data", (d) => (out += d));
      child.stderr.on("data", (d) => (err += d));
      child.on("close", (code) => resolve({ code, out, err }));
    });
    assert.equal(res.code, 0, res.err);
    assert.match(res.out, /Created key \w{12} \(scopes: admin/);
  });

  it("limits shows and sets a project's ingest budget in events per minute, and goes back to the default", () => {
    assert.equal(run(root, "keys-create.mjs", ["limits-test"]).code, 0);
    const shown = run(root, "projects-limits.mjs", ["limits-test"]);
    assert.equal(shown.code, 0, shown.err);
    assert.match(shown.out, /^Project limits-test may ingest 600,000 events per minute \(the default\)\.$/m);
    const set = run(root, "projects-limits.mjs", ["limits-test", "5000"]);
    assert.match(set.out, /^Project limits-test may ingest 5,000 events per minute; its ledger applies it within a minute\.$/m);
    const db = new DatabaseSync(controlDb());
    assert.equal(db.prepare("SELECT ingest_events_per_minute AS v FROM projects WHERE id = 'limits-test'").get().v, 5000);
    assert.match(run(root, "projects-limits.mjs", ["limits-test", "default"]).out, /600,000 events per minute \(the default\)/);
    assert.equal(db.prepare("SELECT ingest_events_per_minute AS v FROM projects WHERE id = 'limits-test'").get().v, null);
    db.close();
    assert.match(run(root, "projects-limits.mjs", ["no-such-project"]).err, /no project no-such-project/);
  });

  // Both layouts (src/model/row-keys.ts): a project made now is keyed, and one made before keys is on the seq index.
  for (const keyed of [false, true]) it(`reindex puts the events verify would report as index_damaged back into their indexes, and only those${keyed ? ", in a keyed project" : ""}`, () => {
    const project = keyed ? "reindex-keyed" : "reindex-test";
    // Ids unique in the shard, as minted ones are: the id index is one for every project of a shard.
    const id = (seq) => `${keyed ? "k" : "e"}${seq}`;
    const made = run(root, "keys-create.mjs", [project]);
    assert.equal(made.code, 0, made.err);
    const file = shardFileOf(project);
    const db = new DatabaseSync(file);
    // Rows written here by hand as the ledger writes them: at the project's key for its seq, or, as one made before
    // keyed row ids wrote them, on the seq index above the shard's rows there.
    if (!keyed) olderLayout(db, project);
    const rowId = keyed ? keyedRowId(`'${project}'`, "?2") : `(${OLDER_TOP} + 1)`;
    const at = "2026-11-29T10:00:00.000Z";
    const insert = db.prepare(
      "INSERT INTO events (row_id, id, project_id, seq, action, targets, metadata, occurred_at, received_at, ip_address, pii_commitment, hash, id_indexed, time_in_span, ip_run, action_in_set) " +
        `VALUES (${rowId}, ?1, '${project}', ?2, ?3, '[]', '{}', ?4, ?5, '10.1.1.1', 'c', 'h', ?6, ?7, ?8, ?9)`,
    );
    // A live commit of 3, whole: its span (by id and in time order) and its action set hold every row.
    for (const seq of [1, 2, 3]) insert.run(id(seq), seq, "doc.read", at, at, 0, 1, 0, 1);
    db.prepare(`INSERT INTO commit_spans (received_at, project_id, first_seq, last_seq, live) VALUES (?, '${project}', 1, 3, 1)`).run(at);
    db.prepare(`INSERT INTO action_sets (project_id, action, received_at, first_seq, last_seq, seqs) VALUES ('${project}', 'doc.read', ?, 1, 3, '[0,1,2]')`).run(at);
    // A commit of 2 whose address run was deleted, and a live commit of 2 whose span was deleted.
    const later = "2026-11-29T11:00:00.000Z";
    for (const seq of [4, 5]) insert.run(id(seq), seq, "a", "2026-01-01T00:00:00.000Z", later, 0, 0, 1, 0);
    db.prepare(`INSERT INTO commit_spans (received_at, project_id, first_seq, last_seq, live) VALUES (?, '${project}', 4, 5, 0)`).run(later);
    const last = "2026-11-29T12:00:00.000Z";
    for (const seq of [6, 7]) insert.run(id(seq), seq, "b", last, last, 0, 1, 0, 0);
    // A lone live event, found by id at its instant (id_indexed 2), whose project tag row (0000abcd) was deleted.
    const lone = "2026-11-29T13:00:00.000Z";
    insert.run(`${Date.parse(lone).toString(16).padStart(12, "0").replace(/^(.{8})/, "$1-")}-7000-8000-00000000abcd`, 8, "c", lone, lone, 2, 0, 0, 0);
    const tags = () => db.prepare(`SELECT tag FROM project_tags WHERE project_id = '${project}'`).all().map((r) => r.tag);
    assert.deepEqual(tags(), []);
    // Two events of three targets (the trigger writes the third's event_targets row): one row deleted, one pointed at event 1.
    const targets = (i) => JSON.stringify([{ id: `d${i}`, type: "doc" }, { id: "t", type: "team" }, { id: `f${i}`, type: "folder" }]);
    for (const seq of [9, 10]) {
      db.prepare(
        `INSERT INTO events (row_id, id, project_id, seq, action, targets, metadata, occurred_at, received_at, pii_commitment, hash) VALUES (${rowId}, ?1, '${project}', ?2, 'd', ?3, '{}', ?4, ?5, 'c', 'h')`,
      ).run(id(seq), seq, targets(seq), "2026-01-02T00:00:00.000Z", last);
    }
    db.prepare(`DELETE FROM event_targets WHERE project_id = '${project}' AND id = 'f9'`).run();
    db.prepare(`UPDATE event_targets SET row_id = (SELECT row_id FROM events WHERE project_id = '${project}' AND seq = 1) WHERE project_id = '${project}' AND id = 'f10'`).run();
    const folders = () => db.prepare(`SELECT t.id, e.seq FROM event_targets t JOIN events e ON e.row_id = t.row_id WHERE t.project_id = '${project}' AND t.type = 'folder' ORDER BY t.id`).all().map((r) => `${r.id}:${r.seq}`);
    assert.deepEqual(folders(), ["f10:1"]);
    const marks = () => db.prepare(`SELECT seq, id_indexed, time_in_span, ip_run, action_in_set FROM events WHERE project_id = '${project}' ORDER BY seq`).all().map((r) => Object.values(r).join(""));
    const keyedRows = db.prepare(`SELECT count(*) AS n FROM events WHERE project_id = ? AND row_id >= ${KEY_SPAN}`).get(project).n;
    assert.equal(keyedRows, keyed ? 10 : 0);
    const first = run(root, "projects-reindex.mjs", [project]);
    assert.equal(first.code, 0, first.err);
    assert.match(first.out, new RegExp(`^Project ${project}: 7 hot events are back in their indexes; GET /v1/events/verify will find them\\.$`, "m"));
    // Untouched: the whole commit. Cleared: the run's mark (the span stays: id_indexed 0), and both of the spanless
    // commit's. The lone event keeps its way (id_indexed 2), its tag row written again.
    const repaired = ["10101", "20101", "30101", "40000", "50000", "61000", "71000", "82000", "91000", "101000"];
    assert.deepEqual(marks(), repaired);
    assert.deepEqual(tags(), [0xabcd]);
    assert.deepEqual(folders(), ["f10:10", "f9:9"]);
    const again = run(root, "projects-reindex.mjs", [project]);
    assert.match(again.out, new RegExp(`^Project ${project}: every hot event is in its indexes; nothing to do\\.$`, "m"));
    assert.deepEqual(marks(), repaired);
    db.close();
    assert.match(run(root, "projects-reindex.mjs", ["no-such-project"]).err, /no project no-such-project/);
  });

  it("reindex leaves a value's live sets that interleave alone, and puts back the events no set names", () => {
    const made = run(root, "keys-create.mjs", ["interleave-test"]);
    assert.equal(made.code, 0, made.err);
    const db = new DatabaseSync(shardFileOf("interleave-test"));
    olderLayout(db, "interleave-test");
    const at = "2026-11-29T10:00:00.000Z";
    const insert = db.prepare(
      // On the seq index, above the shard's rows there: SQLite's own next row id would be some keyed project's.
      "INSERT INTO events (row_id, id, project_id, seq, action, targets, metadata, occurred_at, received_at, pii_commitment, hash, id_indexed, time_in_span, action_in_set) " +
        `VALUES (${OLDER_TOP} + 1, ?, 'interleave-test', ?, 'doc.read', '[]', '{}', ?, ?, 'c', 'h', 0, 1, 1)`,
    );
    for (const seq of [1, 2, 3, 4]) insert.run(`e${seq}`, seq, at, at);
    db.prepare("INSERT INTO commit_spans (received_at, project_id, first_seq, last_seq, live) VALUES (?, 'interleave-test', 1, 4, 1)").run(at);
    // A commit of four doc.read events, each in one set, but the set keyed higher (3) names the lower rows (1, 2):
    // the walk lists an instant's rows by their own seq, whichever set names them, so nothing is to be put back.
    const set = db.prepare("INSERT INTO action_sets (project_id, action, received_at, first_seq, last_seq, seqs) VALUES ('interleave-test', 'doc.read', ?, ?, ?, ?)");
    set.run(at, 1, 4, "[2,3]");
    set.run(at, 3, 3, "[-2,-1]");
    const marks = () => db.prepare("SELECT action_in_set FROM events WHERE project_id = 'interleave-test' ORDER BY seq").all().map((r) => r.action_in_set);
    const nothing = /^Project interleave-test: every hot event is in its indexes; nothing to do\.$/m;
    assert.match(run(root, "projects-reindex.mjs", ["interleave-test"]).out, nothing);
    assert.deepEqual(marks(), [1, 1, 1, 1]);
    // Without the set keyed at 3, rows 1 and 2 are in none: back in the action's index.
    db.prepare("DELETE FROM action_sets WHERE project_id = 'interleave-test' AND first_seq = 3").run();
    const first = run(root, "projects-reindex.mjs", ["interleave-test"]);
    assert.equal(first.code, 0, first.err);
    assert.match(first.out, /^Project interleave-test: 2 hot events are back in their indexes; GET \/v1\/events\/verify will find them\.$/m);
    assert.deepEqual(marks(), [0, 0, 1, 1]);
    assert.match(run(root, "projects-reindex.mjs", ["interleave-test"]).out, nothing);
    db.close();
  });

  it("reindex writes a closed search group's entry again, and leaves the open group without one", () => {
    assert.equal(run(root, "keys-create.mjs", ["search-test"]).code, 0);
    const file = shardFileOf("search-test");
    const db = new DatabaseSync(file);
    olderLayout(db, "search-test");
    // 32 rows as a commit numbers them (src/model/search-index.ts): a closed group of 16 at row_id 500000, whose
    // entry is gone, and the project's 16 newest in the group above it, open as far as the reads know (no row 16 on).
    const insert = db.prepare(
      "INSERT INTO events (row_id, id, project_id, seq, action, targets, metadata, occurred_at, received_at, pii_commitment, hash, search_lead, search_words) " +
        "VALUES (?, ?, 'search-test', ?, 'doc.read', '[]', '{}', '2026-11-29T10:00:00.000Z', '2026-11-29T10:00:00.000Z', 'c', 'h', ?, ?)",
    );
    for (let seq = 1; seq <= 32; seq++) insert.run(500000 + seq - 1, `s${seq}`, seq, (seq - 1) % 16, `doc read u${seq}`);
    const entries = () => db.prepare("SELECT rowid FROM events_search WHERE rowid >= 500000 ORDER BY rowid").all().map((r) => r.rowid);
    assert.deepEqual(entries(), []);
    const first = run(root, "projects-reindex.mjs", ["search-test"]);
    assert.equal(first.code, 0, first.err);
    assert.match(first.out, /^Project search-test: 16 hot events are back in their indexes; GET \/v1\/events\/verify will find them\.$/m);
    assert.deepEqual(entries(), [500000]);
    // The entry holds each event's words behind its slot's tag: the 4th event's own word is found in its slot.
    const { n } = db.prepare("SELECT count(*) AS n FROM events_search WHERE events_search MATCH ? AND rowid = 500000").get(`"${searchTag("search-test").slice(0, 5)}3u4"`);
    assert.equal(n, 1);
    const again = run(root, "projects-reindex.mjs", ["search-test"]);
    assert.match(again.out, /^Project search-test: every hot event is in its indexes; nothing to do\.$/m);
    db.close();
  });

  it("reindex --archived writes an archived segment's index row again from its rows, once", async () => {
    assert.equal(run(root, "keys-create.mjs", ["rebound-test"]).code, 0);
    const file = shardFileOf("rebound-test");
    // A sealed segment of two rows with located ids (the project's tag in their last 8 digits), put in the local bucket.
    const tag = await idTag("rebound-test");
    const located = (at) => `${Date.parse(at).toString(16).padStart(12, "0").replace(/^(.{8})/, "$1-")}-7000-8000-0000${tagSuffix(tag)}`;
    const rows = [
      { id: located("2026-11-29T10:00:00.000Z"), seq: 1, occurred_at: "2026-11-29T09:00:00.000Z", received_at: "2026-11-29T10:00:00.000Z" },
      { id: located("2026-11-29T10:00:05.000Z"), seq: 2, occurred_at: "2026-11-29T08:00:00.000Z", received_at: "2026-11-29T10:00:05.000Z" },
    ];
    const body = gzipSync(rows.map((r) => JSON.stringify({ project_id: "rebound-test", ...r })).join("\n"));
    const segmentFile = join(root, "segment.jsonl.gz");
    writeFileSync(segmentFile, body);
    const key = "archive/rebound-test/000000000001.jsonl.gz";
    const put = spawnSync(join(root, "node_modules", ".bin", "wrangler"), ["r2", "object", "put", `witness-archive/${key}`, "--file", segmentFile, "--local"], { cwd: root, encoding: "utf8", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } });
    assert.equal(put.status, 0, put.stderr);
    // Its index row as a D1 writer left it: moved in time and receive time, under another tag.
    const db = new DatabaseSync(file);
    db.prepare(
      "INSERT INTO archive_segments (project_id, first_seq, last_seq, first_received_at, last_received_at, first_occurred_at, last_occurred_at, count, bytes, sha256, object_key, created_at, id_tag) " +
        "VALUES ('rebound-test', 1, 2, ?1, ?1, ?1, ?1, 2, ?2, ?3, ?4, ?1, ?5)",
    ).run("2000-01-01T00:00:00.000Z", body.byteLength, createHash("sha256").update(body).digest("hex"), key, tag + 1);
    const bounds = () => ({ ...db.prepare("SELECT first_occurred_at, last_occurred_at, first_received_at, last_received_at, id_tag FROM archive_segments WHERE project_id = 'rebound-test'").get() });
    const first = run(root, "projects-reindex.mjs", ["rebound-test", "--archived"]);
    assert.equal(first.code, 0, first.err);
    assert.match(first.out, /^archived: 1 segment's index row written again from their 2 events$/m);
    assert.match(first.out, /^Project rebound-test: 2 events are back in their indexes \(0 hot, 2 archived\); GET \/v1\/events\/verify will find them\.$/m);
    assert.deepEqual(bounds(), {
      first_occurred_at: "2026-11-29T08:00:00.000Z",
      last_occurred_at: "2026-11-29T09:00:00.000Z",
      first_received_at: "2026-11-29T10:00:00.000Z",
      last_received_at: "2026-11-29T10:00:05.000Z",
      id_tag: tag,
    });
    const again = run(root, "projects-reindex.mjs", ["rebound-test", "--archived"]);
    assert.match(again.out, /^Project rebound-test: every event, hot and archived, is in its indexes; nothing to do\.$/m);
    db.close();
  });

  it("tiering off says archived events stay archived and that nothing brings them back", () => {
    assert.equal(run(root, "keys-create.mjs", ["cold-test"]).code, 0);
    const db = new DatabaseSync(controlDb());
    const { hot_days } = db.prepare("SELECT hot_days FROM projects WHERE id = 'cold-test'").get();
    // A new project gets the deployment's DEFAULT_HOT_DAYS (wrangler.toml: 30), as the service gives one.
    assert.equal(hot_days, 30);
    // A segment as the archiver indexes it, on the project's shard.
    const file = shardFileOf("cold-test");
    new DatabaseSync(file).prepare(
      "INSERT INTO archive_segments (project_id, first_seq, last_seq, first_received_at, last_received_at, first_occurred_at, last_occurred_at, count, bytes, sha256, object_key, created_at) " +
        "VALUES ('cold-test', 1, 40, 't', 't', 't', 't', 40, 1, 'x', 'archive/cold-test/1', 't')",
    ).run();
    db.close();
    const off = run(root, "projects-tiering.mjs", ["cold-test", "off"]);
    assert.equal(off.code, 0, off.err);
    assert.match(off.out, /^Project cold-test archives no more events: new ones stay hot \(in D1\)\.$/m);
    assert.match(off.out, /^The 40 events archived earlier \(1 segment\) stay in R2: get, list, search, export, verify, receipts, erasure and retention still span them\.$/m);
    assert.match(off.out, /^To bring them back into D1 \(hot again\): npm run projects:tiering -- cold-test off --restore$/m);
    assert.match(run(root, "projects-tiering.mjs", ["ops-test", "off"]).out, /^Project ops-test keeps every event hot \(in D1\)\.$/m);
  });

  it("sets scopes and a label, defaults to admin only while the project has no live admin key, and lists them", { timeout: 240_000 }, () => {
    const create = (args) => {
      const res = run(root, "keys-create.mjs", ["scoped-test", ...args]);
      assert.equal(res.code, 0, res.err);
      return { out: res.out, prefix: res.out.trim().split("\n").pop().split("_")[2] };
    };
    const first = create([]);
    assert.match(first.out, /scopes: admin: the project had no live admin key/);
    const app = create(["--scope", "ingest", "--label", "billing servers (eu-west)"]);
    assert.match(app.out, /scopes: ingest\) for project scoped-test labelled "billing servers \(eu-west\)"/);
    const support = create(["--scope=admin,read", "--label=support desk"]);
    assert.match(support.out, /scopes: read,admin\)/);
    const later = create([]);
    assert.match(later.out, /scopes: ingest: the default once the project has an admin key/);

    const list = run(root, "keys-list.mjs", ["scoped-test"]);
    assert.equal(list.code, 0, list.err);
    assert.match(list.out, /^  prefix\s+scopes\s+created\s+expires\s+revoked\s+label$/m);
    const line = (k, scopes, label) => new RegExp(`^  ${k.prefix}\\s+${scopes}\\s+\\d{4}-\\d{2}-\\d{2}T\\S+\\s+never\\s+-\\s+${label}$`, "m");
    assert.match(list.out, line(first, "admin", "-"));
    assert.match(list.out, line(app, "ingest", "billing servers \\(eu-west\\)"));
    assert.match(list.out, line(support, "read,admin", "support desk"));
    assert.match(list.out, line(later, "ingest", "-"));
    assert.match(list.out, /Project scoped-test: 4 key\(s\), 4 live/);

    // Revoking the only admin key: the next key defaults to admin again (the project needs one).
    assert.equal(run(root, "keys-revoke.mjs", [first.prefix]).code, 0);
    assert.equal(run(root, "keys-revoke.mjs", [support.prefix]).code, 0);
    assert.match(create([]).out, /scopes: admin: the project had no live admin key/);
  });

  it("defaults the service address to the one npm run dev last printed", () => {
    mkdirSync(join(root, ".wrangler"), { recursive: true });
    writeFileSync(join(root, ".wrangler", "dev-url"), "http://localhost:9   \n");
    // Port 9 (discard) answers nothing: the script names the address it tried.
    const res = run(root, "projects-retention.mjs", ["ops-test"], { WITNESS_URL: "" });
    assert.notEqual(res.code, 0);
    assert.match(res.err, /the service at http:\/\/localhost:9 does not answer/);
  });

  it("shows a locked plan as locked, and says so when the service refuses a change to it (409 RETENTION_LOCKED)", { timeout: 120_000 }, async () => {
    // The service as it answers for a locked plan, in its own process (the script runs synchronously).
    const service = spawn(process.execPath, ["-e", LOCKED_SERVICE], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      const port = await new Promise((resolve) => service.stdout.once("data", (d) => resolve(String(d).trim())));
      const url = `http://127.0.0.1:${port}`;
      const shown = run(root, "projects-retention.mjs", ["ops-test", "--url", url]);
      assert.equal(shown.code, 0, shown.err);
      assert.match(shown.out, /^Retention plan of project ops-test \(locked since 2026-01-01T00:00:00\.000Z: it may only keep events longer\):$/m);
      const refused = run(root, "projects-retention.mjs", ["ops-test", "1", "--url", url]);
      assert.equal(refused.code, 1);
      assert.match(refused.err, /^error: the service refused: 409 RETENTION_LOCKED: The retention plan is locked since 2026-01-01/m);
      // The short-lived keys it called with are deleted, not left revoked: keys:list is as before.
      assert.match(run(root, "keys-list.mjs", ["ops-test"]).out, /Project ops-test: 3 key\(s\), 0 live/);
    } finally {
      service.kill();
    }
  });
});

const LOCKED_SERVICE = `
const plan = { rules: [{ pattern: "*", days: 30 }], locked: true, locked_at: "2026-01-01T00:00:00.000Z" };
const message = "The retention plan is locked since 2026-01-01T00:00:00.000Z: it may only keep events longer; events like x would be kept 1 days (rule *) instead of 30 days (rule *)";
const server = require("node:http").createServer((req, res) => {
  req.resume();
  res.setHeader("Content-Type", "application/json");
  if (req.method === "GET") return res.end(JSON.stringify({ data: plan }));
  res.statusCode = 409;
  res.end(JSON.stringify({ error: { code: "RETENTION_LOCKED", message, details: {} } }));
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
`;
