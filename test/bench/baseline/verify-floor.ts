import type { Context } from "hono";
import { readSealed } from "../../../src/storage/archive-segments";
import { CryptoChain } from "./crypto-step";
import { CHAIN_COLUMNS } from "../../../src/model/chain-row";

type Bindings = { DB: D1Database; ARCHIVE: R2Bucket };
const decoder = new TextDecoder();
const PAGE = 2000;

/**
 * The verify floor (test/bench/verify-floor.bench.mjs): what a verify of ?project= cannot avoid on
 * one core, and nothing else. Every row is read as verify must read it (archived segments fetched,
 * SHA-256 checked against the index, gzip undone, each line parsed; hot rows in seq order, 2,000 a
 * D1 page) and then put through the crypto loop's own code (crypto-step.ts: SHA-256 of prev + payload,
 * an HMAC of the payload, the leaf hash), the row's stored text standing for its payload. With
 * ?commitments=1, also the digest the loop leaves out and verify cannot: SHA-256 of each salted row's
 * salt and personal data, its pii_commitment (without it an edited email or IP would pass). No links,
 * no leaves or erasures asked of the ledger, no chunks, no Workflow: a ceiling for the verify job,
 * run on Witness's local D1 and R2 after Witness has stopped.
 */
export async function verifyFloor(c: Context<{ Bindings: Bindings }>) {
  const projectId = c.req.query("project") ?? "bench-jobs";
  // A warm-up walk reads only the oldest ?segments= segments and no hot row.
  const warmUp = c.req.query("segments") !== undefined;
  const commitments = c.req.query("commitments") === "1";
  const chain = await CryptoChain.create();
  // The personal data in a fixed order, as the commitment covers it (its exact text is Witness's business).
  const step = (payload: string, row: Record<string, unknown>) =>
    commitments && typeof row.pii_salt === "string"
      ? chain.stepWithCommitment(payload, row.pii_salt, JSON.stringify([row.actor_email, row.actor_id, row.actor_name, row.ip_address, row.user_agent]))
      : chain.step(payload);
  let rows = 0;
  const env = { ARCHIVE: c.env.ARCHIVE } as unknown as Env;
  const { results: segments } = await c.env.DB.prepare("SELECT object_key, sha256 FROM archive_segments WHERE project_id = ? ORDER BY first_seq LIMIT ?")
    .bind(projectId, warmUp ? Number(c.req.query("segments")) : -1)
    .all<{ object_key: string; sha256: string }>();
  // The next segment is fetched and unpacked while this one is checked, as verify's walk does.
  const fetch = (i: number) => (i < segments.length ? readSealed(env, segments[i].object_key, segments[i].sha256) : null);
  let next = fetch(0);
  for (let i = 0; i < segments.length; i++) {
    const bytes = await next!;
    next = fetch(i + 1);
    if (typeof bytes === "string") throw new Error(`segment ${segments[i].object_key}: ${bytes}`);
    for (const line of decoder.decode(bytes).split("\n")) {
      await step(line, JSON.parse(line));
      rows++;
    }
  }
  if (warmUp) return c.json({ rows, segments: segments.length });
  const page = c.env.DB.prepare(`SELECT ${CHAIN_COLUMNS} FROM events WHERE project_id = ? AND seq > ? ORDER BY seq LIMIT ${PAGE}`);
  for (let after = 0; ; ) {
    const { results } = await page.bind(projectId, after).all<Record<string, unknown> & { seq: number }>();
    for (const row of results) await step(JSON.stringify(row), row);
    rows += results.length;
    if (results.length < PAGE) break;
    after = results[results.length - 1].seq;
  }
  return c.json({ rows, segments: segments.length });
}
