import { DurableObject } from "cloudflare:workers";
import type { EventRow } from "../db/schema";
import type { Anchor, Head } from "../chain/chain-check";
import { recoverHead } from "../chain/head-recovery";
import { piiCommitment, sealRow } from "../chain/payload";
import { randomHex, uuidV7 } from "../lib/crypto";
import { eventJson } from "../reads/event-shape";
import { eraseActor } from "../chain/erasure";
import { RateWindows, type RateState } from "../auth/rate-window";
import { purgeBatch } from "../chain/retention";
import { loadKeyring } from "../chain/signing-keys";
import type { NewEvent } from "../schemas/event";
import { eventsDb } from "../storage/shards";
import { insertEventsStatements } from "../chain/event-insert";
import { findIdempotent } from "../chain/idempotency";

export interface AppendRequest {
  events: NewEvent[];
  idempotencyKey: string | null;
  /** API key prefix and its per-minute budget: ingest is rate limited per key. */
  keyPrefix: string;
  rateLimit: number;
}

/**
 * events: each event's JSON in the API's event shape, in chain order. Text
 * rather than rows: a string crosses the RPC boundary far cheaper than an
 * object of twenty fields, and the worker only writes it into its answer.
 */
export type AppendResult =
  | { status: "appended" | "replayed"; events: string[]; rate: RateState }
  | { status: "rate_limited"; rate: RateState };

interface Pending {
  events: NewEvent[];
  idempotencyKey: string | null;
  resolve: (rows: EventRow[]) => void;
  reject: (error: unknown) => void;
}

/** Bound on one group commit, so one D1 batch stays well inside its limits. */
const MAX_GROUP_EVENTS = 1000;

/**
 * The only writer of one project's chain. Concurrent appends queue up and are
 * committed together in one D1 batch (group commit) that also moves the head;
 * the in-memory head moves only after D1 said yes.
 */
export class ProjectLedger extends DurableObject<Env> {
  private readonly projectId: string;
  private current: Head = { seq: 0, hash: null };
  /** The project's event shard, resolved once: the ledger is the only writer of its events. */
  private db!: D1Database;
  private queue: Pending[] = [];
  private lock: Promise<void> = Promise.resolve();
  private commitScheduled = false;
  private readonly inFlight = new Map<string, Promise<{ replayed: boolean; events: string[] }>>();
  private readonly rates = new RateWindows();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    if (!ctx.id.name) throw new Error("ProjectLedger must be addressed by project id (idFromName)");
    this.projectId = ctx.id.name;
    ctx.blockConcurrencyWhile(() => this.loadHead());
  }

  /**
   * The head lives in this object's own storage, never taken from D1. Rows
   * found past it are adopted only after recoverHead checked them (a commit
   * whose answer was lost); planted rows are refused and left for verify.
   */
  private async loadHead() {
    this.db = await eventsDb(this.env, this.projectId);
    if (this.ctx.storage.kv.get<number>("signed_from") === undefined) this.ctx.storage.kv.put("signed_from", 1);
    const stored = this.ctx.storage.kv.get<Head>("head") ?? { seq: 0, hash: null };
    const ring = await loadKeyring(this.env.SIGNING_KEYS);
    const recovered = await recoverHead(this.db, ring, this.projectId, stored, MAX_GROUP_EVENTS);
    if (recovered.refused) console.warn(`ledger ${this.projectId}: kept head ${stored.seq}; rows past it refused: ${recovered.refused}`);
    this.current = recovered.head;
    if (recovered.adopted.length > 0) this.ctx.storage.kv.put("head", this.current);
  }

  /**
   * What verification anchors on: the head as this ledger committed it and the
   * seq from which every row is signed (1 for every project this code made; an
   * operator importing an older, unsigned history would record a later one).
   */
  anchor(): Anchor {
    return { ...this.current, signedFrom: this.ctx.storage.kv.get<number>("signed_from") ?? 1 };
  }

  async append(req: AppendRequest): Promise<AppendResult> {
    const rate = this.rates.hit(req.keyPrefix, req.rateLimit);
    if (!rate.allowed) return { status: "rate_limited", rate };
    if (req.idempotencyKey === null) return { status: "appended", events: (await this.enqueue(req)).map(eventJson), rate };

    // Registered before any await, so concurrent retries with the same key share one append.
    const key = req.idempotencyKey;
    const running = this.inFlight.get(key);
    if (running) return { status: "replayed", events: (await running).events, rate };
    const attempt = (async () => {
      const earlier = await findIdempotent(this.db, this.projectId, key);
      const replayed = earlier !== null;
      return { replayed, events: (earlier ?? (await this.enqueue(req))).map(eventJson) };
    })();
    this.inFlight.set(key, attempt);
    try {
      const { replayed, events } = await attempt;
      return { status: replayed ? "replayed" : "appended", events, rate };
    } finally {
      this.inFlight.delete(key);
    }
  }

  /**
   * Erasure rewrites rows of this chain, so it holds the commit lock as a group
   * commit does: appends arriving meanwhile queue up and commit right after.
   */
  eraseActor(actorId: string, organization: string | null): Promise<number> {
    return this.exclusive(() => eraseActor(this.env, this.db, { projectId: this.projectId, actorId, organization }));
  }

  /** Counts an ingest request that failed before it could be appended. */
  countRequest(keyPrefix: string, limit: number): RateState {
    return this.rates.hit(keyPrefix, limit);
  }

  /** One bounded retention batch; it holds the commit lock, so it never interleaves with an append. */
  purgeExpired(now: string, afterSeq: number): Promise<{ purged: number; done: boolean; lastSeq: number }> {
    return this.exclusive(async () =>
      purgeBatch(this.db, await loadKeyring(this.env.SIGNING_KEYS), this.projectId, new Date(now), afterSeq),
    );
  }

  /**
   * Runs work while holding the commit lock. Waiters are served in arrival
   * order, so a long stream of appends cannot starve an erasure or a purge.
   */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.lock.then(work);
    this.lock = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  private enqueue(req: AppendRequest): Promise<EventRow[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ events: req.events, idempotencyKey: req.idempotencyKey, resolve, reject });
      this.scheduleCommit();
    });
  }

  /** Group commit: everything queued while the lock was busy goes into the next batch. */
  private scheduleCommit() {
    if (this.commitScheduled || this.queue.length === 0) return;
    this.commitScheduled = true;
    void this.exclusive(async () => {
      this.commitScheduled = false;
      const group: Pending[] = [];
      let size = 0;
      while (this.queue.length > 0 && (group.length === 0 || size + this.queue[0].events.length <= MAX_GROUP_EVENTS)) {
        const next = this.queue.shift()!;
        size += next.events.length;
        group.push(next);
      }
      await this.commit(group);
    }).finally(() => this.scheduleCommit());
  }

  private async commit(group: Pending[]) {
    try {
      const rows = await this.buildRows(group.flatMap((p) => p.events));
      const last = rows[rows.length - 1];
      const now = new Date().toISOString();
      const statements = insertEventsStatements(this.db, rows);
      let offset = 0;
      const slices = group.map((p) => {
        const slice = rows.slice(offset, offset + p.events.length);
        offset += p.events.length;
        if (p.idempotencyKey !== null) {
          statements.push(
            this.db.prepare(
              "INSERT OR REPLACE INTO idempotency_keys (project_id, key, event_ids, created_at) VALUES (?, ?, ?, ?)",
            ).bind(this.projectId, p.idempotencyKey, JSON.stringify(slice.map((r) => r.id)), now),
          );
        }
        return slice;
      });
      await this.db.batch(statements);
      this.current = { seq: last.seq, hash: last.hash };
      this.ctx.storage.kv.put("head", this.current);
      group.forEach((p, i) => p.resolve(slices[i]));
    } catch (error) {
      // A D1 batch is one transaction: nothing of it was stored. Reload the head
      // anyway, in case the commit did land and only its answer was lost.
      await this.loadHead().catch(() => {});
      group.forEach((p) => p.reject(error));
    }
  }

  private async buildRows(events: NewEvent[]): Promise<EventRow[]> {
    const ring = await loadKeyring(this.env.SIGNING_KEYS);
    const receivedAt = new Date().toISOString();
    let { seq, hash: prevHash } = this.current;
    const rows: EventRow[] = [];
    for (const e of events) {
      seq += 1;
      const salt = randomHex(16);
      const row = await sealRow(
        {
          ...e,
          row_id: null as unknown as number,
          id: uuidV7(),
          project_id: this.projectId,
          seq,
          occurred_at: e.occurred_at ?? receivedAt,
          received_at: receivedAt,
          pii_salt: salt,
          pii_commitment: await piiCommitment(salt, e),
          prev_hash: prevHash,
          anonymized_at: null,
        },
        ring,
      );
      prevHash = row.hash;
      rows.push(row);
    }
    return rows;
  }
}
