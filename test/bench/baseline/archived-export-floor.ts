import type { Context } from "hono";
import { sha256Hex } from "../../../src/lib/crypto";
import { readSealed } from "../../../src/storage/archive-segments";

type Bindings = { DB: D1Database; ARCHIVE: R2Bucket; STAGING: R2Bucket };
const decoder = new TextDecoder();
const encoder = new TextEncoder();

/**
 * The archived-export floor (test/bench/archived-export-floor.bench.mjs): what an export job of a
 * project's archived rows cannot avoid, and nothing else. Every sealed segment of ?project= (Witness's
 * own local D1 index and R2 archive, read after Witness has stopped) is fetched, its SHA-256 checked
 * against its index row and its gzip undone (Witness's own readSealed), and each line parsed as JSON
 * (a row must be read to be filtered or rendered); the lines are written back unchanged as files of
 * ?part_rows= rows into a bucket of the floor's own, each with its SHA-256, as an export job's parts are.
 * No rendering, no job record, no Workflow step: a ceiling for the export job's archived part.
 * The staged files are deleted at the end, outside the timed part's answer.
 */
export async function archivedExportFloor(c: Context<{ Bindings: Bindings }>) {
  const projectId = c.req.query("project") ?? "bench-jobs";
  const partRows = Number(c.req.query("part_rows") ?? "20000");
  const { results: segments } = await c.env.DB.prepare("SELECT object_key, sha256 FROM archive_segments WHERE project_id = ? ORDER BY first_seq DESC")
    .bind(projectId)
    .all<{ object_key: string; sha256: string }>();
  const env = { ARCHIVE: c.env.ARCHIVE } as unknown as Env;
  let rows = 0;
  let part: string[] = [];
  const keys: string[] = [];
  const flush = async () => {
    const bytes = encoder.encode(part.join("\n"));
    const key = `archived-export-floor/${projectId}/part-${keys.length}`;
    await c.env.STAGING.put(key, bytes);
    await sha256Hex(bytes);
    keys.push(key);
    part = [];
  };
  for (const segment of segments) {
    const bytes = await readSealed(env, segment.object_key, segment.sha256);
    if (typeof bytes === "string") throw new Error(`segment ${segment.object_key}: ${bytes}`);
    for (const line of decoder.decode(bytes).split("\n")) {
      JSON.parse(line);
      part.push(line);
      rows++;
      if (part.length === partRows) await flush();
    }
  }
  if (part.length > 0) await flush();
  for (let i = 0; i < keys.length; i += 1000) await c.env.STAGING.delete(keys.slice(i, i + 1000));
  return c.json({ rows, segments: segments.length, parts: keys.length });
}
