import type { Rule } from "./rules";

/**
 * Unusual volume ("kind": "anomaly"): the hour now under way, against the
 * same hour of each of the previous 7 days, from the ledger's hourly rollups
 * (counts per hour of occurred_at and action, kept at commit time; never a
 * scan of the events). With mean m and standard deviation s of those 7
 * counts, the rule fires when this hour's count so far reaches
 *
 *   max(min_count, m + sensitivity * max(s, sqrt(m), 1))
 *
 * (sqrt(m): counts are Poisson-like, so a quiet, steady baseline still allows
 * the noise of its own size). Defaults: min_count 20, sensitivity 4. It fires
 * at most once per hour and cooldown.
 */
export const DEFAULT_MIN_COUNT = 20;
export const DEFAULT_SENSITIVITY = 4;
const HOUR_MS = 3_600_000;

export interface AnomalyVerdict {
  hour: number;
  count: number;
  baseline: number[];
  limit: number;
  fires: boolean;
}

export function hoursToRead(now: number): number[] {
  const hour = Math.floor(now / HOUR_MS);
  return [hour, ...Array.from({ length: 7 }, (_, k) => hour - 24 * (k + 1))];
}

export function judge(rule: Rule, now: number, counts: Record<number, number>): AnomalyVerdict {
  const [hour, ...before] = hoursToRead(now);
  const baseline = before.map((h) => counts[h] ?? 0);
  const mean = baseline.reduce((a, b) => a + b, 0) / baseline.length;
  const sd = Math.sqrt(baseline.reduce((a, b) => a + (b - mean) ** 2, 0) / baseline.length);
  const { min_count, sensitivity } = { min_count: DEFAULT_MIN_COUNT, sensitivity: DEFAULT_SENSITIVITY, ...rule.anomaly };
  const limit = Math.max(min_count, Math.ceil(mean + sensitivity * Math.max(sd, Math.sqrt(mean), 1)));
  const count = counts[hour] ?? 0;
  return { hour, count, baseline, limit, fires: count >= limit };
}
