// Verify's test of whether a set's offsets name a row (src/model/stand-ins.ts, holds), in Node's own SQLite, against
// the search of the text alone that it had before it required the text to hold nothing but numbers (the search
// found an offset inside a string or a nested array, which the walks never read). 200,000 rows, each in a set of
// SIZE offsets STEP apart (consecutive when STEP is 1: a request's rows), median of 5 runs of all the rows:
// `npx node test/bench/set-check-sqlite.mjs`; sizes and steps as in the sets Witness writes (an address's, an
// action's, an organization's).
import { DatabaseSync } from "node:sqlite";
import { holds } from "../../src/model/stand-ins.ts";

const searchAlone = (s) => `instr(',' || substr(${s}.seqs, 2, length(${s}.seqs) - 2) || ',', ',' || (r.seq - ${s}.first_seq) || ',') > 0`;

function timeShape(size, step) {
  const db = new DatabaseSync(":memory:");
  db.exec("CREATE TABLE sets (first_seq INTEGER PRIMARY KEY, seqs TEXT); CREATE TABLE rows (seq INTEGER PRIMARY KEY, first INTEGER)");
  const set = db.prepare("INSERT INTO sets VALUES (?, ?)");
  const row = db.prepare("INSERT INTO rows VALUES (?, ?)");
  db.exec("BEGIN");
  for (let first = 1; first <= 200_000; first += size * step) {
    const offsets = Array.from({ length: size }, (_, i) => i * step);
    set.run(first, JSON.stringify(offsets));
    for (const o of offsets) row.run(first + o, first);
  }
  db.exec("COMMIT");
  const check = (test) => db.prepare(`SELECT sum(${test}) AS held, count(*) AS n FROM rows r JOIN sets s ON s.first_seq = r.first`);
  const variants = { "rows alone": check("1"), "search alone": check(searchAlone("s")), "holds": check(holds("s")) };
  const times = {};
  for (let run = 0; run < 5; run++) {
    for (const [name, statement] of Object.entries(variants)) {
      const t = process.hrtime.bigint();
      const { held, n } = statement.get();
      const ms = Number(process.hrtime.bigint() - t) / 1e6;
      if (held !== n) throw new Error(`${name}: ${held} of ${n} rows held`);
      (times[name] ??= []).push((ms * 1000) / n);
    }
  }
  const median = (name) => times[name].sort((a, b) => a - b)[2].toFixed(2);
  console.log(`a set of ${String(size).padStart(4)}, ${step === 1 ? "consecutive " : `${step} apart`.padEnd(12)}  rows alone ${median("rows alone")} µs, search alone ${median("search alone")} µs, holds ${median("holds")} µs a row`);
}

for (const [size, step] of [[4, 1], [4, 25], [30, 3], [100, 1], [100, 2], [200, 1], [1000, 1]]) timeShape(size, step);
console.log("set check: done");
