/**
 * src/receipts/: what a receipt proves about one event, checked the way verify
 * checks it (src/chain/chain-check.ts) and signed with the log's key
 * (src/sealing/receipt-signing.ts). The whole concept is this file.
 */
import { CHAIN_START, checkLink, checkRow, erasureVouches, gapLookup, rowAfter, rowBefore, type LedgerView } from "../chain/chain-check";
import { ledgerView } from "../chain/ledger";
import { eventsReadDb, projectShard, shardDb, shardNumbers, withProjectArms } from "../storage/shards";
import { isGonePeriod, overArms, shardArms, type Arm } from "../model/periods";
import { archivedEventAnywhere, legacyEventAnywhere } from "../storage/archive-lookup";
import { loadKeyring, type SigningKeyring } from "../sealing/signing-keys";
import { originalOf, PENDING_AS, scrubArchived, scrubObjects } from "../model/pending-erasures";
import { CHAIN_COLUMNS, type ChainRow } from "../model/chain-row";
import { eventsByIdStatement } from "../model/event-lookup";
import { idMillis, tagOfId } from "../model/event-id";

export const RECEIPT_TYPE = "witness.receipt.v1";

/** What anyone holding a receipt may learn: never names, e-mails, IPs, user agents or metadata. */
export interface PublicCheck {
  hash: boolean;
  signature: boolean;
  predecessor_link: boolean;
  successor_link: boolean;
}

/**
 * The row as reads serve it: scrubbed when an erasure still being applied
 * covers it (src/model/pending-erasures.ts), so a receipt never shows an
 * erased actor id. checkEvent checks the stored row (originalOf): a row its
 * erasure's job has not reached yet is still intact, and valid.
 */
async function served(row: (ChainRow & { _pending?: unknown }) | null): Promise<ChainRow | null> {
  if (!row) return null;
  const { _pending, ...stored } = row;
  return (await scrubObjects([stored], () => _pending))[0];
}

/**
 * The first answer of `read` that is not null over the shard's arms
 * (model/periods.ts; an event is in one arm). The main tables are read beside
 * the list of periods, so a shard with none answers in the time it did.
 */
async function firstInArms<T>(db: D1Database, read: (arm: D1Database) => Promise<T | null>): Promise<T | null> {
  try {
    const [main, arms] = await Promise.all([read(db), shardArms(db)]);
    if (main !== null || arms.length === 1) return main;
    return (await overArms(db, read, arms.slice(1))).find((r) => r !== null) ?? null;
  } catch (error) {
    // A period dropped since it was listed: list them again.
    if (!isGonePeriod(error)) throw error;
    return (await overArms(db, read)).find((r) => r !== null) ?? null;
  }
}

/** The hot row of an event by id (model/event-lookup.ts), in one project or, with null, in any, in whichever arm of the shard it is. */
function hotChainRow(db: D1Database, id: string, projectId: string | null): Promise<(ChainRow & { _pending?: unknown }) | null> {
  const { sql, params } = eventsByIdStatement(`${CHAIN_COLUMNS}, ${PENDING_AS}`, [id], projectId);
  return firstInArms(db, (arm) => arm.prepare(sql).bind(...params).first());
}

export async function loadChainRow(db: D1Database, id: string, projectId: string): Promise<ChainRow | null> {
  return served(await hotChainRow(db, id, projectId));
}

/**
 * A public receipt names only the event: look on every shard at once (ids are
 * unique UUIDs). An archived event is found through its shard's id index: one
 * project's one segment is read, never another project's (whose damaged
 * segment therefore cannot fail this lookup), and none for an unknown id.
 * A damaged segment of the event's own project throws ArchiveDamagedError.
 */
export async function findChainRow(env: Env, id: string): Promise<ChainRow | null> {
  const shards = shardNumbers(env);
  const rows = await Promise.all(
    shards.map(async (n) => served(await hotChainRow(shardDb(env, n), id, null))),
  );
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    // A copy left on a shard the project no longer lives on (a move under way) is not its event.
    if (row && (await projectShard(env, row.project_id)) === shards[i]) return row;
  }
  const owns = (n: number) => async (projectId: string) => (await projectShard(env, projectId)) === n;
  const archived = await Promise.all(
    shards.map(async (n) => {
      const row = await archivedEventAnywhere(env, shardDb(env, n), id, owns(n));
      return row && (await scrubArchived(shardDb(env, n), row.project_id, [row]))[0];
    }),
  );
  const row = archived.find((r) => r !== null);
  if (row) return row;
  // Segments sealed before the id index, until the archiver has indexed them.
  for (const n of shards) {
    const legacy = await legacyEventAnywhere(env, shardDb(env, n), id, owns(n));
    if (legacy) return (await scrubArchived(shardDb(env, n), legacy.project_id, [legacy]))[0];
  }
  return inBacklog(env, id);
}

/**
 * An event its project's ledger answered before D1 had it (a shard that lags:
 * chain/commit-backlog.ts): its id's tag names the project among those whose
 * backlog mark is set, whose ledger indexes it when asked. Only after every
 * other look missed: one query a shard.
 */
async function inBacklog(env: Env, id: string): Promise<ChainRow | null> {
  if (idMillis(id) === null) return null;
  // Every shard at once, as the looks above.
  const marked = await Promise.all(
    shardNumbers(env).map(async (n) => {
      const { results } = await shardDb(env, n).prepare("SELECT project_id FROM ingest_backlog WHERE tag = ?").bind(tagOfId(id)).all<{ project_id: string }>();
      return results.map((r) => ({ shard: n, projectId: r.project_id }));
    }),
  );
  for (const { shard, projectId } of marked.flat()) {
    if ((await projectShard(env, projectId)) !== shard) continue;
    const row = served(await hotChainRow(await eventsReadDb(env, projectId), id, projectId));
    if (row) return row;
  }
  return null;
}

/**
 * One event's own checks plus both of its links, the newest event's link being
 * the recorded head. `arms`: the shard's arms (model/periods.ts) its neighbours
 * are looked for in, or none to list them now.
 */
export async function publicCheck(db: D1Database, ring: SigningKeyring, row: ChainRow, head: LedgerView, arms?: Arm[]): Promise<PublicCheck> {
  const gaps = gapLookup(db, row.project_id);
  const [content, before, after, erased] = await Promise.all([
    checkRow(ring, row),
    // An archived row's neighbours may be archived too (src/storage/archive-walk.ts).
    rowBefore(db, row.project_id, row.seq, arms).then(async (r) => r ?? (await head.archive?.rowBefore(row.seq)) ?? null),
    (head.archive?.rowAfter(row.seq) ?? Promise.resolve(null)).then(async (r) => (r && r.seq <= head.seq ? r : rowAfter(db, row.project_id, row.seq, head.seq, arms))),
    row.anonymized_at === null ? ({} as Record<number, string>) : head.erasedAt([row.seq]),
  ]);
  const hash = content.hash && erasureVouches(row, erased);
  const [predecessor, successor] = await Promise.all([
    checkLink(ring, before ?? CHAIN_START, row, gaps),
    row.seq > head.seq ? { ok: false } : checkLink(ring, row, after ?? { seq: head.seq + 1, prev_hash: head.hash }, gaps),
  ]);
  return { hash, signature: content.signature === true, predecessor_link: predecessor.ok, successor_link: successor.ok };
}

/** publicCheck against the current signing keys and the head the project's ledger recorded. */
export async function checkEvent(env: Env, row: ChainRow): Promise<PublicCheck> {
  const [ring, head] = await Promise.all([loadKeyring(env.SIGNING_KEYS), ledgerView(env, row.project_id)]);
  const db = await eventsReadDb(env, row.project_id);
  return withProjectArms(env, row.project_id, (arms) => publicCheck(db, ring, originalOf(row), head, arms));
}

export function isValid(check: PublicCheck): boolean {
  return check.hash && check.signature && check.predecessor_link && check.successor_link;
}

export function receiptUrls(origin: string, id: string) {
  const path = encodeURIComponent(id);
  return { verification_url: `${origin}/v1/receipts/${path}`, view_url: `${origin}/receipts/${path}` };
}

/** The fields both public surfaces and the receipt show. */
export function publicFields(row: ChainRow) {
  const target = (JSON.parse(row.targets) as Array<{ type: string; id: string }>)[0];
  return {
    event_id: row.id,
    action: row.action,
    actor: row.actor_type === null && row.actor_id === null ? null : { type: row.actor_type, id: row.actor_id },
    target: target ? { type: target.type, id: target.id } : null,
    occurred_at: row.occurred_at,
    seq: row.seq,
    hash: row.hash,
    prev_hash: row.prev_hash,
  };
}

/**
 * The receipt before its Ed25519 proof; `valid` is the public check at
 * issuance. `tlog_proof` is the event's c2sp.org/tlog-proof@v1 text (null
 * while the project's log is being built), covered by the receipt's proof.
 */
export function receiptBody(row: ChainRow, check: PublicCheck, origin: string, issuedAt: string, tlogProof: string | null = null) {
  const { event_id, action, actor, target, occurred_at, seq, hash, prev_hash } = publicFields(row);
  return {
    type: RECEIPT_TYPE,
    event_id,
    action,
    actor,
    target,
    occurred_at,
    hash,
    prev_hash,
    signature: row.signature,
    seq,
    valid: isValid(check),
    issued_at: issuedAt,
    ...receiptUrls(origin, row.id),
    tlog_proof: tlogProof,
  };
}

/** The raw JSON behind verification_url. */
export function publicStatus(row: ChainRow, check: PublicCheck, origin: string, checkedAt: string) {
  return {
    ...publicFields(row),
    exists: true,
    valid: isValid(check),
    checks: check,
    checked_at: checkedAt,
    view_url: receiptUrls(origin, row.id).view_url,
  };
}
