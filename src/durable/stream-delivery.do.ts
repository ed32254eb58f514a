import { DurableObject } from "cloudflare:workers";
import { deliveryLag, readBatch, type Batch, type DeliveryConfig, type Pending } from "../streams/batch-read";
import { openCredential } from "../streams/secrets";
import { getStream, setStreamStatus, type StreamFilter, type StreamStatus } from "../streams/store";
import { sendBatch } from "../streams/send";
import { targetRules } from "../streams/targets";
import { backoffMs, streamPolicy } from "../streams/transport";
import { WAKE_CACHE_MS } from "../streams/wake";
import { signalIntegrity } from "../alerts/integrity";

/** What GET /v1/streams/:id shows of the delivery. */
export interface DeliveryStatus {
  status: StreamStatus;
  delivered_seq: number;
  lag_events: number;
  lag_seconds: number;
  last_success_at: string | null;
  /** The last failure, kept after recovery (compare last_error_at with last_success_at). */
  last_error: string | null;
  last_error_at: string | null;
  next_attempt_at: string | null;
  consecutive_failures: number;
  /** Events purged by retention before this stream delivered them: never delivered, never silently. (Archived events are delivered from the archive.) */
  skipped_events: number;
  skipped_ranges: SkippedRange[];
}

export interface SkippedRange {
  first_seq: number;
  last_seq: number;
  skipped_at: string;
}


const MAX_SKIPPED_RANGES = 20;

/**
 * One log stream's delivery: a cursor on the project's seq order. Woken by the
 * ledger after commits (wake) and by its alarm; all delivery runs in the alarm,
 * so it is one at a time, retried by the runtime if the object is evicted
 * mid-run, and the ledger never waits for it. The cursor moves only after a
 * 2xx; a failed batch is retried as the same (from, to] range.
 */
export class StreamDelivery extends DurableObject<Env> {
  private readonly streamId: string;
  private config: DeliveryConfig | null = null;
  private readonly kv: SyncKvStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    if (!ctx.id.name) throw new Error("StreamDelivery must be addressed by stream id (idFromName)");
    this.streamId = ctx.id.name;
    this.kv = ctx.storage.kv;
  }

  /** At creation: delivery starts after `cursor` (the head then). */
  async start(cursor: number): Promise<void> {
    if (this.kv.get<number>("cursor") !== undefined) return;
    this.kv.put("cursor", cursor);
    this.kv.put("status", "active");
    this.kv.put("started_at", Date.now());
    await this.ctx.storage.setAlarm(Date.now());
  }

  /** New events were committed: deliver soon, unless backing off or disabled. Cheap; returns at once. */
  async wake(): Promise<void> {
    if (this.kv.get("deleted") || this.kv.get<number>("cursor") === undefined) return;
    const status = this.kv.get<StreamStatus>("status");
    if (status === "disabled" || status === "failing" || status === "paused") return; // failing: the backoff alarm decides
    const now = Date.now();
    const alarm = await this.ctx.storage.getAlarm();
    if (alarm === null || alarm > now) await this.ctx.storage.setAlarm(now);
  }

  /** Restarts delivery at fromSeq (events from it on are sent again); re-enables a disabled stream. A paused stream stays paused, its cursor moved. */
  async replay(fromSeq: number): Promise<void> {
    if (this.kv.get("deleted")) return;
    this.kv.put("gen", (this.kv.get<number>("gen") ?? 0) + 1);
    this.kv.put("cursor", Math.max(0, fromSeq - 1));
    this.kv.delete("pending");
    this.kv.put("failures", 0);
    this.kv.delete("next_attempt_at");
    if (this.kv.get<StreamStatus>("status") === "paused") return;
    await this.setStatus("active");
    await this.ctx.storage.setAlarm(Date.now());
  }

  /** Stops delivery where it stands (true if it was not paused already); a batch on its way ends first. */
  async pause(): Promise<boolean> {
    if (this.kv.get("deleted") || this.kv.get<StreamStatus>("status") === "paused") return false;
    await this.setStatus("paused");
    this.kv.delete("next_attempt_at");
    await this.ctx.storage.deleteAlarm();
    return true;
  }

  /** Delivery goes on from the cursor (true if it was paused); the batch a pause interrupted is sent again whole. */
  async resume(): Promise<boolean> {
    if (this.kv.get("deleted") || this.kv.get<StreamStatus>("status") !== "paused") return false;
    this.kv.put("failures", 0);
    await this.setStatus("active");
    await this.ctx.storage.setAlarm(Date.now());
    return true;
  }

  /** The stream was deleted: stop and forget everything. */
  async remove(): Promise<void> {
    this.kv.put("deleted", true);
    this.config = null;
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.kv.put("deleted", true);
  }

  async status(): Promise<DeliveryStatus> {
    const cursor = this.kv.get<number>("cursor") ?? 0;
    const row = await getStream(this.env, this.streamId);
    const lag = row ? await deliveryLag(this.env, row.project_id, cursor) : { events: 0, seconds: 0 };
    const skipped = this.kv.get<SkippedRange[]>("skipped_ranges") ?? [];
    return {
      status: this.kv.get<StreamStatus>("status") ?? "active",
      delivered_seq: cursor,
      lag_events: lag.events,
      lag_seconds: lag.seconds,
      last_success_at: this.kv.get<string>("last_success_at") ?? null,
      last_error: this.kv.get<string>("last_error") ?? null,
      last_error_at: this.kv.get<string>("last_error_at") ?? null,
      next_attempt_at: this.kv.get<string>("next_attempt_at") ?? null,
      consecutive_failures: this.kv.get<number>("failures") ?? 0,
      skipped_events: this.kv.get<number>("skipped_events") ?? 0,
      skipped_ranges: skipped,
    };
  }

  async alarm(): Promise<void> {
    if (this.kv.get("deleted") || this.kv.get<number>("cursor") === undefined) return;
    const stopped = () => ["disabled", "paused"].includes(this.kv.get<StreamStatus>("status") ?? "active");
    if (stopped()) return;
    const started = Date.now();
    try {
      const config = await this.loadConfig();
      if (!config) return;
      // The next batch is read from D1 while the current one is on its way.
      let prefetched = null as { from: number; batch: Promise<Batch | null> } | null;
      while (Date.now() - started < streamPolicy.runBudgetMs) {
        if (stopped()) return; // paused meanwhile: no alarm until resumed
        const gen = this.kv.get<number>("gen") ?? 0;
        const cursor = this.kv.get<number>("cursor")!;
        const batch: Batch | null = await (prefetched?.from === cursor ? prefetched.batch : readBatch(this.env, config, cursor, this.kv.get<Pending>("pending")));
        prefetched = null;
        if (!batch) {
          if (this.kv.get<StreamStatus>("status") === "failing") {
            // What failed is gone (purged by retention): nothing is left to fail on.
            this.kv.put("failures", 0);
            this.kv.delete("next_attempt_at");
            await this.setStatus("active");
          }
          // Caught up. Wake-ups are best effort: look again now and then anyway,
          // unless a wake-up during this run already asked for an earlier run.
          // A new stream polls every second until the ledgers' caches of stream lists (wake.ts) have seen it.
          const young = Date.now() - (this.kv.get<number>("started_at") ?? 0) < 2 * WAKE_CACHE_MS;
          const idle = young ? Math.min(1000, streamPolicy.idlePollMs) : streamPolicy.idlePollMs;
          if (!stopped() && (await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + idle);
          return;
        }
        if (batch.events.length > 0) {
          this.kv.put("pending", { from: cursor, to: batch.to } satisfies Pending);
          prefetched = { from: batch.to, batch: readBatch(this.env, config, batch.to, this.kv.get<Pending>("pending")) };
          prefetched.batch.catch(() => {}); // a failure surfaces when it is used; unused, it does not matter
          const outcome = await sendBatch(config.dest, batch.events, targetRules(this.env), { from: cursor, to: batch.to });
          if (this.kv.get("deleted")) return;
          if ((this.kv.get<number>("gen") ?? 0) !== gen) continue; // replayed meanwhile: start over from the new cursor
          if (outcome.kind !== "ok" && this.kv.get<StreamStatus>("status") === "paused") {
            // Paused while it was on its way: keep the error, send the same batch again on resume.
            this.kv.put("last_error", outcome.error);
            this.kv.put("last_error_at", new Date().toISOString());
            return;
          }
          if (outcome.kind === "gone") {
            this.kv.put("last_error", outcome.error);
            this.kv.put("last_error_at", new Date().toISOString());
            this.kv.delete("next_attempt_at");
            await this.setStatus("disabled");
            return;
          }
          if (outcome.kind === "failed") return this.fail(outcome.error);
        }
        this.advance(cursor, batch);
      }
      if (!stopped()) await this.ctx.storage.setAlarm(Date.now());
    } catch (error) {
      // Our side failed (D1, the key): retried like a destination failure, without its details.
      console.error(`stream ${this.streamId}: delivery run failed`, error);
      await this.fail("internal error while preparing the batch; retrying");
    }
  }

  private advance(cursor: number, batch: Batch) {
    if (this.kv.get<number>("cursor") !== cursor) return;
    const now = new Date().toISOString();
    if (batch.gaps.length > 0) {
      const ranges = this.kv.get<SkippedRange[]>("skipped_ranges") ?? [];
      for (const g of batch.gaps) ranges.push({ ...g, skipped_at: now });
      this.kv.put("skipped_ranges", ranges.slice(-MAX_SKIPPED_RANGES));
      this.kv.put("skipped_events", (this.kv.get<number>("skipped_events") ?? 0) + batch.gaps.reduce((n, g) => n + g.last_seq - g.first_seq + 1, 0));
      console.warn(`stream ${this.streamId}: skipped ${batch.gaps.map((g) => `${g.first_seq}-${g.last_seq}`).join(", ")} (purged by retention before delivery)`);
    }
    this.kv.put("cursor", batch.to);
    this.kv.delete("pending");
    if (batch.events.length > 0) {
      this.kv.put("last_success_at", now);
      this.kv.put("failures", 0);
      this.kv.delete("next_attempt_at");
      if (this.kv.get<StreamStatus>("status") === "failing") {
        this.kv.put("status", "active");
        this.ctx.waitUntil(setStreamStatus(this.env, this.streamId, "active").catch(() => {}));
      }
    }
  }

  private async fail(error: string) {
    this.kv.put("last_error", error);
    this.kv.put("last_error_at", new Date().toISOString());
    if (this.kv.get<StreamStatus>("status") === "paused") return; // resume retries it
    const failures = (this.kv.get<number>("failures") ?? 0) + 1;
    const next = Date.now() + backoffMs(failures);
    this.kv.put("failures", failures);
    this.kv.put("next_attempt_at", new Date(next).toISOString());
    const changed = this.kv.get<StreamStatus>("status") !== "failing";
    this.kv.put("status", "failing");
    await this.ctx.storage.setAlarm(next);
    if (changed) await this.mirrorStatus().catch(() => {});
    if (changed) await this.alertIntegrity("failing");
  }

  private async setStatus(status: StreamStatus) {
    const before = this.kv.get<StreamStatus>("status");
    this.kv.put("status", status);
    if (before !== status) await this.mirrorStatus();
    if (before !== status && status === "disabled") await this.alertIntegrity("disabled");
  }

  /** A stream that stops delivering is the trail in danger: the project's integrity rules hear of it (src/alerts/integrity.ts). */
  private async alertIntegrity(status: "failing" | "disabled") {
    const projectId = this.config?.dest.projectId ?? (await getStream(this.env, this.streamId))?.project_id;
    if (!projectId) return;
    const error = this.kv.get<string>("last_error") ?? "no answer";
    await signalIntegrity(this.env, projectId, {
      kind: status === "failing" ? "stream_failing" : "stream_disabled",
      subject: this.streamId,
      message: `Log stream ${this.streamId} is ${status}: ${error}.`,
      next_step:
        status === "failing"
          ? "It retries with backoff; fix the destination (GET /v1/streams/{id} shows the last error) and it catches up on its own."
          : "It no longer delivers: fix the destination, then POST /v1/streams/{id}/replay to deliver what it missed.",
    }).catch((e) => console.error(`integrity alert for stream ${this.streamId} failed`, e));
  }

  /** The control database's copy (lists, wakes) follows this object's status as it is when written, so a pause racing a failure ends paused in both. */
  private mirrorStatus() {
    return setStreamStatus(this.env, this.streamId, this.kv.get<StreamStatus>("status") ?? "active");
  }

  private async loadConfig(): Promise<DeliveryConfig | null> {
    if (this.config && Date.now() - this.config.loadedAt < streamPolicy.reloadConfigMs) return this.config;
    const row = await getStream(this.env, this.streamId);
    if (!row) {
      await this.remove();
      return null;
    }
    this.config = {
      dest: {
        streamId: row.id,
        projectId: row.project_id,
        type: row.type,
        url: row.url,
        credential: await openCredential(this.env, row.id, row.credential),
        host: this.env.LOG_ORIGIN_HOST || "witness",
        encoding: row.encoding,
      },
      filter: JSON.parse(row.filter) as StreamFilter,
      format: row.format ?? "json",
      loadedAt: Date.now(),
    };
    return this.config;
  }
}
