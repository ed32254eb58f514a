import { DurableObject } from "cloudflare:workers";
import { AlertEngine } from "../alerts/engine";
import { dailyVerify, type IntegritySignal } from "../alerts/integrity";
import { ruleView, type Rule } from "../alerts/rules";

/** After a wake, the evaluator waits this long so a burst of commits is one notification. */
const COALESCE_MS = 1000;
/** Wakes are best effort: with rules, it also looks for missed events this often. */
const IDLE_POLL_MS = 60_000;
/** One alarm run delivers for at most this long, then schedules the next at once. */
const RUN_BUDGET_MS = 20_000;
/** With an integrity channel, the project is verified (incrementally) this often. */
const VERIFY_EVERY_MS = 86_400_000;

/**
 * One project's alert evaluator (idFromName(projectId)): its rules, cursor,
 * windows, firings and deliveries (src/alerts/engine.ts). Woken by the
 * ledger after commits; all evaluation and delivery run in its alarm, one at a
 * time, retried by the runtime if the object is evicted mid-run.
 */
export class AlertEvaluator extends DurableObject<Env> {
  private readonly engine: AlertEngine;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    if (!ctx.id.name) throw new Error("AlertEvaluator must be addressed by project id (idFromName)");
    this.engine = new AlertEngine(ctx, env, ctx.id.name);
  }

  async wake(): Promise<void> {
    const alarm = await this.ctx.storage.getAlarm();
    const at = Date.now() + COALESCE_MS;
    if (alarm === null || alarm > at) await this.ctx.storage.setAlarm(at);
  }

  list() {
    this.engine.ensureIntegrityRule();
    return this.engine.rules().map((r) => ruleView(r, this.engine.channelStates(r.id, r.channels.length)));
  }

  get(id: string) {
    const rule = this.engine.rule(id);
    return rule && ruleView(rule, this.engine.channelStates(id, rule.channels.length));
  }

  stored(id: string): Rule | null {
    return this.engine.rule(id);
  }

  /** Rules that match events: the ledger wakes this object after commits only when there are some. */
  count(): number {
    return this.engine.rules().filter((r) => r.kind === "events").length;
  }

  /** Every rule, for the per-project cap. */
  total(): number {
    return this.engine.rules().length;
  }

  /** An integrity signal (src/alerts/integrity.ts): recorded at once, delivered by the alarm. */
  async signal(signal: IntegritySignal): Promise<void> {
    if (this.engine.signal(signal) > 0) await this.ctx.storage.setAlarm(Date.now());
  }

  async save(rule: Rule, head: number) {
    this.engine.save(rule, head);
    // A channel on an integrity rule starts the daily verify: the first one within a day.
    if (this.engine.watchesIntegrity() && this.ctx.storage.kv.get<number>("next_verify_at") === undefined) this.ctx.storage.kv.put("next_verify_at", Date.now() + VERIFY_EVERY_MS);
    await this.wake();
    return this.get(rule.id)!;
  }

  remove(id: string): boolean {
    if (!this.engine.rule(id)) return false;
    this.engine.remove(id);
    return true;
  }

  async sendTest(id: string) {
    const rule = this.engine.rule(id);
    if (!rule) return null;
    const firing = await this.engine.test(rule);
    return this.engine.firings(id, firing + 1, 1)[0];
  }

  firings(id: string, before: number | null, limit: number) {
    return this.engine.firings(id, before, limit);
  }

  async alarm(): Promise<void> {
    const verifyAt = this.ctx.storage.kv.get<number>("next_verify_at");
    if (verifyAt !== undefined && verifyAt <= Date.now() && this.engine.watchesIntegrity()) {
      this.ctx.storage.kv.put("next_verify_at", Date.now() + VERIFY_EVERY_MS);
      const found = await dailyVerify(this.env, this.ctx.id.name!);
      if (found) this.engine.signal(found);
    }
    const { read, more } = await this.engine.evaluate();
    await this.engine.checkAnomalies();
    const nextDelivery = await this.engine.deliverDue(RUN_BUDGET_MS);
    const now = Date.now();
    const candidates = [
      more ? now : null,
      // It found events: look again soon, for a commit whose wake the ledger skipped (src/alerts/wake.ts).
      read > 0 ? now + 2 * COALESCE_MS : null,
      nextDelivery,
      this.engine.rules().some((r) => r.enabled && r.kind !== "integrity") ? now + IDLE_POLL_MS : null,
      this.engine.watchesIntegrity() ? (this.ctx.storage.kv.get<number>("next_verify_at") ?? null) : null,
    ].filter((t): t is number => t !== null);
    if (candidates.length > 0) await this.ctx.storage.setAlarm(Math.max(now, Math.min(...candidates)));
  }
}
