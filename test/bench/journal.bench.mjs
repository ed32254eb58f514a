// Issue 38, item 3: what a commit would cost if the ledger's own SQLite held it first (a journal)
// and D1 were indexed from it afterwards. The baseline worker's JournalFloor object
// (baseline/journal-floor.ts: no Witness code) writes one commit of BENCH_JOURNAL_EVENTS (1,000)
// sealed-event-sized rows a request and answers once storage has synced: packed into one row, or a
// row an event; "hop" stores nothing and is the Worker-to-object round trip under both, "build" makes
// the rows and stores nothing (the ledger has them made already when it would write). Rounds alternate
// the four, so a slow spell of this machine lands on all of them.
import { httpGet, latencies } from "./lib.mjs";

/** One GET of the baseline a case: fails on anything but 200, keeps the last answer of each case. */
function probe(baselineUrl, path, answers) {
  return (name) => async () => {
    const res = await httpGet(`${baselineUrl}${path(name)}`);
    if (res.status !== 200) throw new Error(`${path(name)}: ${res.status} ${res.body}`);
    answers[name] = JSON.parse(res.body);
  };
}

export default async function journal({ baselineUrl, report }) {
  const events = Number(process.env.BENCH_JOURNAL_EVENTS ?? 1000);
  const rounds = Number(process.env.BENCH_JOURNAL_ROUNDS ?? 100);
  const last = {};
  const layouts = ["hop", "build", "packed", "rows"];
  const times = await latencies(layouts.map(probe(baselineUrl, (layout) => `/journal-floor?layout=${layout}&events=${events}`, last)), rounds, 5);
  const per = (n) => (n / events).toFixed(3);
  report(
    `A commit of ${events.toLocaleString("en-US")} events written durably to a Durable Object's SQLite (${rounds} rounds, one commit a request, answered after sync())`,
    layouts.map((layout, i) => {
      const { written, deleted, bytes } = last[layout];
      const rows = layout === "hop" ? "nothing stored" : layout === "build" ? "the rows made and joined, nothing stored" : `rows written an event ${per(written)} at the write, ${per(deleted)} at the delete; ${Math.round(bytes / events)} bytes an event`;
      return [layout, `p50 ${times[i].p50.toFixed(1)} / p95 ${times[i].p95.toFixed(1)} ms; ${rows}`];
    }),
  );

  // What reading a backlog mark with a page costs a read (baseline/mark-floor.ts), in the baseline's D1.
  const n = Number(process.env.BENCH_MARK_ROWS ?? 100_000);
  await probe(baselineUrl, () => `/mark-floor?read=setup&n=${n}`, {})("setup")();
  const reads = ["plain", "batched", "first"];
  const answers = {};
  const pages = await latencies(reads.map(probe(baselineUrl, (how) => `/mark-floor?read=${how}`, answers)), rounds * 2, 10);
  const what = {
    plain: "the page alone, one statement",
    batched: "the mark's lookup and the page in one batch",
    first: "the mark's lookup answered first, then the page",
  };
  report(
    `A page of 51 of ${n.toLocaleString("en-US")} rows with and without a backlog mark (${rounds * 2} rounds)`,
    reads.map((how, i) => [what[how], `p50 ${pages[i].p50.toFixed(2)} / p95 ${pages[i].p95.toFixed(2)} ms (${answers[how].rows} rows)`]),
  );
}
