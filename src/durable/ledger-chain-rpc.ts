import type { RateState } from "../lib/rate-window";
import type { Head } from "../chain/chain-check";
import { unpackEvents, type PackedEvents } from "../chain/ledger";
import { actorErasures, type ActorErasure, type ErasureAnswer } from "../chain/erasure";
import type { ErasureStepResult } from "../chain/erasure-steps";
import type { AppendRequest, AppendResult } from "../chain/idempotent-appends";
import type { AuditActor, AuditOrigin } from "../chain/self-audit";
import { eventJson } from "../model/event-shape";
import type { ActionSeen, Activity, Bucket } from "../reads/rollups";
import type { TrustedCompanions } from "../storage/companion-records";
import { LedgerHistoryRpc } from "./ledger-history-rpc";
import type { ErasureBy, ErasureRequest } from "../chain/erasure-running";

/**
 * The ledger's RPC facet for the chain itself: appends (plain, keyed and
 * self-audit), erasures, and what verify and exports ask of it (the anchor,
 * the committed head, erasure records, trusted companions, activity).
 */
export abstract class LedgerChainRpc extends LedgerHistoryRpc {
  /** The head after every commit queued before this call has finished (verify: committed, or planted?). */
  committedHead(): Promise<Head> {
    return this.commits.exclusive(async () => ({ ...this.current }));
  }

  /** Once D1 holds every commit answered so far: asked by a read that found the project's backlog mark (src/storage/own-writes.ts). */
  indexed(): Promise<void> {
    return this.commits.indexed();
  }

  /** GET /v1/events/feed?wait=: the head's seq once it passes afterSeq, or after at most 25 s with the head as it is. */
  waitForHead(afterSeq: number, ms: number): Promise<number> {
    return this.heads.wait(afterSeq, () => this.current.seq, Math.min(ms, 25_000));
  }

  /** How many alert rules the project has: the ledger wakes its evaluator after commits only when there are some (src/alerts/wake.ts). */
  setAlertRules(count: number): void {
    this.ctx.storage.kv.put("alert_rules", count);
  }

  /** Admin actions recorded in the chain (src/chain/self-audit.ts): appended like events, never rate limited. */
  async selfAudit(events: PackedEvents): Promise<string[]> {
    const display = this.compiled().display;
    return (await this.commits.enqueue(unpackEvents(events))).map((row) => eventJson(row, display));
  }

  async append(request: AppendRequest): Promise<AppendResult> {
    // Checked against another catalog than the current one: the worker checks them again (src/catalog/catalog-cache.ts).
    if (request.catalogRevision !== this.catalog.revision()) return { status: "catalog_stale", revision: this.catalog.revision() };
    const rate = this.rates.hit(request.keyPrefix, request.rateLimit);
    if (!rate.allowed) return { status: "rate_limited", rate };
    const events = unpackEvents(request.events);
    const bytes = request.bytes ?? 0;
    const refusal = await this.admission.admit(events.length, bytes, Date.now(), request.sentAt ?? null);
    if (refusal) return { status: "overloaded", rate, refusal };
    const display = this.compiled().display;
    const token = request.token ?? null;
    if (request.idempotencyKey === null) return { status: "appended", events: (await this.commits.enqueue(events, null, null, bytes, token)).map((row) => eventJson(row, display)), rate };
    return { ...(await this.keyed.run(events, request.idempotencyKey, request.requestHash, display, bytes, token)), rate };
  }

  /** After a worker's call to append failed: the append's events (in the API's shape) when it was stored, or null (GroupCommit.lost). */
  async lostAppend(token: string, sentAt: number): Promise<string[] | null> {
    const display = this.compiled().display;
    const rows = await this.commits.lost(token, sentAt);
    return rows === null ? null : rows.map((row) => eventJson(row, display));
  }

  /** Counts an ingest request that failed before it could be appended. */
  countRequest(keyPrefix: string, limit: number): RateState {
    return this.rates.hit(keyPrefix, limit);
  }

  /** DELETE /v1/actors/:id: answers at once; a job applies it (src/chain/erasure-coordinator.ts). */
  erase(req: Omit<ErasureRequest, "projectId">, by: AuditActor, origin: AuditOrigin): Promise<ErasureAnswer> {
    return this.erasing.accept(req, by, origin);
  }

  /** GET /v1/actors/:id/erasures: the erasures recorded for this id (or e-mail), oldest first. */
  erasuresOf(by: ErasureBy, value: string): Promise<ActorErasure[]> {
    return actorErasures(this.erasures, by, value);
  }

  /** One bounded step of an erasure's job; each holds the commit lock for one batch or one segment's switch. */
  erasureStep(erasureId: number): Promise<ErasureStepResult> {
    return this.erasing.step(erasureId);
  }

  /** For exports and verify: the companion hashes this ledger recorded for these archive segments (by the segment's SHA-256). */
  companionHashes(segmentSha256s: string[]): TrustedCompanions {
    return this.companions.lookup(segmentSha256s);
  }

  /** For verify: the anonymized_at an erasure record gives each of these seqs (absent: no erasure covers it). */
  erasedAt(seqs: number[]): Record<number, string> {
    return this.erasures.erasedAt(seqs);
  }

  /** GET /v1/stats/activity: events per bucket and top action, from the rollups (never the events). */
  activity(from: string, to: string, bucket: Bucket): Activity {
    return this.rollups.read(from, to, bucket);
  }

  /** Anomaly alert rules: events per hour of the actions these patterns name, from the rollups (never the events). */
  hourCounts(patterns: string[], hours: number[]): Record<number, number> {
    return this.rollups.hourCounts(patterns, hours);
  }

  /** GET /v1/actions: every action recorded, with its count and first and last hour, from the rollups (never the events). */
  actions(prefix: string, after: string | null, limit: number): ActionSeen[] {
    const seen = this.rollups.actions(prefix, after, limit);
    const versions = this.catalog.newestVersions(seen.map((a) => a.action));
    return seen.map((a) => ({ ...a, schema_version: versions.get(a.action) ?? null }));
  }
}
