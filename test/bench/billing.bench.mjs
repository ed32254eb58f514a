// Issue 38: what D1 bills (meta.rows_written) for each shape of write, measured in the baseline
// worker's own local D1 (baseline/billing-shapes.ts): the rows-per-event arithmetic in the bench
// README ("Where the rows stop") rests on these figures.
import { httpGet } from "./lib.mjs";

export default async function billing({ baselineUrl, report }) {
  const n = Number(process.env.BENCH_BILLING_ROWS ?? 1000);
  const res = await httpGet(`${baselineUrl}/billing-shapes?n=${n}`);
  if (res.status !== 200) throw new Error(`billing shapes: ${res.status} ${res.body}`);
  const { shapes } = JSON.parse(res.body);
  report(`What D1 bills a row (rows written, ${n.toLocaleString("en-US")} rows a shape)`, shapes.map((s) => [s.shape, s.perRow.toFixed(3)]));
}
