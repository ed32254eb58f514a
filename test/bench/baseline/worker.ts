import { Hono } from "hono";
import { CSV_COLUMNS } from "../../../src/model/csv";
import type { Cursor } from "../../../src/model/cursor";
import { selectEvents, type Selection } from "../../../src/model/event-query";
import { shardRowKey } from "../../../src/model/row-keys";
import { EXPORT_BATCH } from "../../../src/reads/export-stream";
import { archivedExportFloor } from "./archived-export-floor";
import { billingShapes } from "./billing-shapes";
import { CryptoChain } from "./crypto-step";
import { d1InsertFloor } from "./d1-insert-floor";
import { JournalFloor, journalFloor } from "./journal-floor";
import { markFloor } from "./mark-floor";
import { verifyFloor } from "./verify-floor";
import { deleteExpiredExports, STAGED_TTL_MS } from "../../../src/storage/staged-exports";

const encoder = new TextEncoder();
const app = new Hono<{ Bindings: { DB: D1Database; STAGING: R2Bucket; EXPORTS: R2Bucket; ARCHIVE: R2Bucket; JOURNAL: DurableObjectNamespace<JournalFloor> } }>();

/** The no-op POST that ingest is compared with: parse the JSON body, answer 201. */
app.post("/noop", async (c) => {
  const body = await c.req.json();
  return c.json({ data: { ok: true, action: body.action } }, 201);
});

/** Batch ingest's inserts through local D1 alone (d1-insert-floor.ts); the prefix lets batchLoad drive it. */
app.post("/d1-insert-floor/v1/events/batch", d1InsertFloor);

/** The crypto loop (crypto-step.ts) over n made-up events. The client times the request. */
app.get("/crypto-loop", async (c) => {
  const n = Number(c.req.query("n") ?? "1000");
  const chain = await CryptoChain.create();
  for (let i = 0; i < n; i++) {
    await chain.step(`{"action":"user.login.succeeded","actor_type":"user","id":"${i}","metadata":{"plan":"pro","seq":${i}},"occurred_at":"2026-05-05T05:05:05.000Z","organization":"org_1","pii":"${chain.prev}","project_id":"bench","seq":${i},"targets":[{"id":"doc_1","name":"Q3","type":"document"}],"v":1}`);
  }
  return c.json({ n, last: chain.prev });
});

/**
 * What the runtime alone costs the parts of an export (?to=):
 * - read: the export's own keyset pages (same query, columns and page size)
 *   read from D1; only a line feed per row is sent on;
 * - send: one such page read once, its cells joined with commas, and those
 *   bytes sent as often as ?rows= takes pages: no D1, no rendering;
 * - stage: the same, each copy put into R2 first, up to three puts at once
 *   (as the export overlaps them).
 * A ceiling for each part, not a measure of the export.
 */
app.get("/export-floor", async (c) => {
  const to = c.req.query("to") ?? "read";
  const sel: Selection = {
    projectId: c.req.query("project") ?? "bench-large",
    organization: null, actorId: null, ipAddress: null, dateFrom: null, dateTo: null, actions: null, exclude: [],
  };
  const columns = CSV_COLUMNS.map((col) => `e.${col}`).join(", ");
  const occurredAt = CSV_COLUMNS.indexOf("occurred_at");
  const seq = CSV_COLUMNS.indexOf("seq");
  // The project's layout in its shard, as Witness's reads know it (storage/shards.ts, projectRowKey).
  const rowKey = await shardRowKey(c.env.DB, sel.projectId);
  const readPage = (cursor: Cursor | null) => {
    const statement = selectEvents(sel, { columns, rowKey, cursor, limit: EXPORT_BATCH });
    return c.env.DB.prepare(statement.sql).bind(...statement.params).raw();
  };
  if (to === "read") {
    let cursor: Cursor | null = null;
    let done = false;
    const pages = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          if (done) return controller.close();
          const rows = await readPage(cursor);
          done = rows.length < EXPORT_BATCH;
          const last = rows[rows.length - 1];
          if (last) cursor = { occurredAt: last[occurredAt] as string, seq: last[seq] as number };
          controller.enqueue(encoder.encode("\n".repeat(rows.length)));
        },
      },
      { highWaterMark: 0 },
    );
    return c.body(pages, 200, { "Content-Type": "text/plain; charset=utf-8" });
  }
  const pageCount = Math.ceil(Number(c.req.query("rows") ?? "1000000") / EXPORT_BATCH);
  let text = "";
  for (const row of await readPage(null)) text += `${row.join(",")}\r\n`;
  const bytes = encoder.encode(text);
  const ahead: Promise<unknown>[] = [];
  let started = 0;
  let sent = 0;
  const copies = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (sent === pageCount) return controller.close();
        if (to === "stage") {
          while (ahead.length < 3 && started < pageCount) ahead.push(c.env.STAGING.put(`floor/${started++}`, bytes));
          await ahead.shift();
        }
        sent++;
        controller.enqueue(bytes);
      },
    },
    { highWaterMark: 0 },
  );
  return c.body(copies, 200, { "Content-Type": "text/plain; charset=utf-8" });
});

/** The floor of an export job's archived part (archived-export-floor.ts). */
app.get("/archived-export-floor", archivedExportFloor);
/** The floor of a verify job: every row read as verify reads it, then the crypto loop's work (verify-floor.ts). */
app.get("/verify-floor", verifyFloor);

/** What local D1 bills for each shape of write (billing-shapes.ts). */
app.get("/billing-shapes", billingShapes);

/** One commit written durably to a Durable Object's own SQLite, and no Witness code (journal-floor.ts). */
app.get("/journal-floor", journalFloor);
/** A page of rows read alone, or with a backlog mark's lookup in its batch or before it (mark-floor.ts). */
app.get("/mark-floor", markFloor);

/**
 * Deletes Witness's staged export objects under --persist-to, as the daily
 * cron would a day from now. Under the bench no cron runs, and every read
 * bench stages ~1.5 GB.
 */
app.post("/staged-exports/delete", async (c) => {
  const deleted = await deleteExpiredExports(c.env, new Date(Date.now() + STAGED_TTL_MS));
  return c.json({ deleted });
});

export default app;
export { JournalFloor };
