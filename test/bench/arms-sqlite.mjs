// What SQLite itself spends on a list page read over several periods (model/periods.ts) against the floor's one
// read of the main tables, on the shards a `npm run bench -- reads` run left: the statements Witness builds
// (bundled from src/ with esbuild), prepared and run in Node's SQLite on the shard files, read only. A rare
// filter's page takes rows of several periods; this says how much of its time over the floor is SQLite compiling
// and running one walk a period, and what `orderedOverArms` (the walks in place merged in list order: an actor's
// everywhere, a rare action's or a target id's in the settled periods whose facts allow) saves.
// Not Witness code: run by hand, after a reads bench has made both directories,
//   BENCH_FLOOR=/tmp/bd1m BENCH_DATA=/tmp/bdun node_modules/node/bin/node test/bench/arms-sqlite.mjs
// (about a minute). Figures in the bench README ("An actor's page merged in SQL").
import { readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { build } from "esbuild";

const floorDir = process.env.BENCH_FLOOR, periodsDir = process.env.BENCH_DATA;
if (!floorDir || !periodsDir) throw new Error("set BENCH_FLOOR (main tables) and BENCH_DATA (periods) to two reads benches' data directories");
const ROUNDS = Number(process.env.ROUNDS ?? 300);

const lib = join(tmpdir(), `arms-sqlite-${process.pid}.mjs`);
process.on("exit", () => rmSync(lib, { force: true }));
const src = new URL("../../src/", import.meta.url).pathname;
const bundled = await build({
  stdin: { contents: `export { selectEvents } from "./model/event-query"; export { SHAPE_SELECT } from "./model/event-shape"; export { ARM_FACTS_SQL, armFacts, armGrowing, compounding, inPeriod, orderedOverArms, PERIOD_MS } from "./model/periods";`, resolveDir: src, loader: "ts" },
  bundle: true, format: "esm", platform: "node", write: false,
});
writeFileSync(lib, bundled.outputFiles[0].text);
const { selectEvents, SHAPE_SELECT, ARM_FACTS_SQL, armFacts, armGrowing, compounding, inPeriod, orderedOverArms, PERIOD_MS } = await import(lib);

/** The largest D1 file of a bench directory: its events shard. */
function shard(dir) {
  const d1 = join(dir, "v3/d1/miniflare-D1DatabaseObject");
  const files = readdirSync(d1).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
  return new DatabaseSync(join(d1, files.sort((a, b) => statSync(join(d1, b)).size - statSync(join(d1, a)).size)[0]), { readOnly: true });
}
const floor = shard(floorDir), periods = shard(periodsDir);
const project = "bench-large";
const rowKey = periods.prepare("SELECT n FROM project_keys WHERE project_id = ?").get(project)?.n ?? null;
// The periods holding rows of the project: the arms a rare filter's first page reaches.
const arms = periods
  .prepare("SELECT n FROM periods ORDER BY n DESC")
  .all()
  .map((p) => p.n)
  .filter((n) => periods.prepare(`SELECT 1 FROM events_p${n} WHERE project_id = ? LIMIT 1`).get(project) !== undefined);

const p50 = (a) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
// Each settled arm's facts, as armSpans reads them (the two-minute periods' numbers, read as weeks, lie far ahead:
// settled), timed: a read of spans takes them every 30 s.
const factTimes = [];
const facts = arms.map((n) => {
  if (armGrowing(n, Date.now(), 30_000, PERIOD_MS)) return undefined;
  const st = periods.prepare(inPeriod(ARM_FACTS_SQL, n));
  let row;
  for (let k = 0; k < 50; k++) { const t0 = performance.now(); row = st.get(project); factTimes.push(performance.now() - t0); }
  return armFacts(row);
});
/** p50 ms of preparing `sql` and of running it, and its rows. */
function timed(db, sql, values) {
  const prep = [], run = [];
  let st, rows;
  for (let k = 0; k < ROUNDS; k++) { const t0 = performance.now(); st = db.prepare(sql); prep.push(performance.now() - t0); }
  for (let k = 0; k < ROUNDS; k++) { const t0 = performance.now(); rows = st.all(...values); run.push(performance.now() - t0); }
  return { prep: p50(prep), run: p50(run), rows: rows.length };
}
/** The compound statement `compounding` sends for `statement` read in each of `over` (a D1 stand-in records it). */
async function compound(statement, over) {
  let sent = null;
  const recorder = { prepare: (sql) => ({ bind: (...values) => ({ all: async () => ((sent = { sql, values }), { results: [], meta: {} }) }) }) };
  const armOf = compounding(recorder);
  await Promise.all(over.map((arm) => armOf(arm).prepare(statement.sql).bind(...statement.params).all()));
  return sent;
}

const none = { projectId: project, organization: null, actorId: null, ipAddress: null, dateFrom: null, dateTo: null, actions: null, exclude: [] };
const filters = [
  ["actor (1 in 5,000)", { ...none, actorId: "user_42" }],
  ["action (1 in 10,000)", { ...none, actions: ["security.key.rotated"] }],
  ["target_id (1 in 20,000)", { ...none, targetType: "document", targetId: "doc_42" }],
];
const cell = (t) => `${t.prep.toFixed(3)} + ${t.run.toFixed(3)} = ${(t.prep + t.run).toFixed(3)} (${t.rows} rows)`;
console.log(`first page of 50 (51 read), p50 ms prepare + run, ${ROUNDS} rounds; periods holding rows: ${arms.join(", ")}`);
console.log(`settled periods' facts: ${facts.map((f, k) => `${arms[k]}: ${f === undefined ? "growing" : JSON.stringify(f)}`).join("; ")}; read in ${p50(factTimes).toFixed(3)} ms p50 a period`);
console.log("| | floor, main tables | a statement a period, compounded | merged in list order |");
console.log("|---|---|---|---|");
for (const [name, sel] of filters) {
  const statement = selectEvents(sel, { columns: SHAPE_SELECT, rowKey, cursor: null, limit: 51 });
  const one = timed(floor, statement.sql, statement.params);
  const c = await compound(statement, arms);
  const each = timed(periods, c.sql, c.values);
  // As listEventsOverArms reads it: each arm's walk in place where its facts allow, the others' whole statements.
  const byArm = facts.map((f) => selectEvents(sel, { columns: SHAPE_SELECT, rowKey, cursor: null, limit: 51, facts: f }));
  const placed = byArm.find((s) => s.ordered !== undefined);
  const merged = placed ? cell(timed(periods, orderedOverArms(byArm.map((s) => s.ordered?.term ?? s.sql), arms, placed.ordered.limit), placed.params)) : "(no walk in place)";
  console.log(`| ${name} | ${cell(one)} | ${cell(each)} | ${merged} |`);
}
