import { describe, expect, it } from "vitest";
import { judge } from "../../src/alerts/anomaly";
import type { Rule } from "../../src/alerts/rules";
import { call, createProject, ingestMany } from "../helpers";

const HOUR = 3_600_000;
const rule = { kind: "anomaly", anomaly: {} } as unknown as Rule;

describe("anomaly rules", () => {
  it("judge: this hour against the same hour of the last 7 days, by the documented formula", () => {
    const now = Date.UTC(2026, 10, 20, 14, 30);
    const h = Math.floor(now / HOUR);
    const days = (n: number[]) => Object.fromEntries(n.map((c, k) => [h - 24 * (k + 1), c]));
    // Quiet baseline: min_count rules.
    expect(judge(rule, now, { [h]: 19, ...days([2, 2, 2, 2, 2, 2, 2]) })).toMatchObject({ limit: 20, fires: false });
    expect(judge(rule, now, { [h]: 20, ...days([2, 2, 2, 2, 2, 2, 2]) })).toMatchObject({ limit: 20, fires: true });
    // Busy, steady baseline of 100: 100 + 4 * sqrt(100) = 140.
    expect(judge(rule, now, { [h]: 139, ...days([100, 100, 100, 100, 100, 100, 100]) })).toMatchObject({ limit: 140, fires: false });
    // Noisy baseline: its deviation (about 37.4) counts instead.
    expect(judge({ ...rule, anomaly: { sensitivity: 2 } } as Rule, now, { [h]: 200, ...days([50, 150, 100, 100, 50, 150, 100]) })).toMatchObject({ limit: 176, fires: true });
  });

  it("fire once an hour when an action pattern bursts far above its usual level, from the rollups", async () => {
    const p = await createProject();
    // "This hour" is the clock's hour when the burst lands and is judged; a test started in an hour's last
    // minute (about 1 run in 60) waits for the next, so both happen in the hour the baseline was laid out for.
    const left = HOUR - (Date.now() % HOUR);
    if (left < 60_000) await new Promise((r) => setTimeout(r, left + 100));
    // The baseline at the start of the same hour of the last 7 days: 30 events spread over 30 s from `now`
    // straddled the hour when run in its last 30 s, the same hour then had 10 of them, and doc.read fired.
    const now = Math.floor(Date.now() / HOUR) * HOUR;
    const usual = Array.from({ length: 7 }, (_, k) => [0, 1].map((i) => ({ action: "auth.login.failed", occurred_at: new Date(now - (k + 1) * 24 * HOUR + i * 1000).toISOString() }))).flat();
    const burst = Array.from({ length: 25 }, () => ({ action: "auth.login.failed" }));
    const steady = Array.from({ length: 7 }, (_, k) => Array.from({ length: 30 }, (_, i) => ({ action: "doc.read", occurred_at: new Date(now - (k + 1) * 24 * HOUR + i * 1000).toISOString() }))).flat();
    await ingestMany(p.key, [...usual, ...burst, ...steady, ...Array.from({ length: 25 }, () => ({ action: "doc.read" }))]);
    const made = async (name: string, actions: string[]) => {
      const res = await call("POST", "/v1/alerts", { key: p.key, body: { name, kind: "anomaly", match: { actions }, channels: [] } });
      expect(res.status, res.text).toBe(201);
      return res.json.data.id;
    };
    const logins = await made("login burst", ["auth.login.*"]);
    const reads = await made("read burst", ["doc.read"]);
    const firings = async (id: string) => (await call("GET", `/v1/alerts/${id}/firings`, { key: p.key })).json.data;
    const end = Date.now() + 20_000;
    while ((await firings(logins)).length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    const [fired] = await firings(logins);
    expect(fired.reason).toMatch(/^25 events of auth\.login\.\* this hour .* at or above 20; the same hour of the last 7 days had 2, 2, 2, 2, 2, 2, 2$/);
    expect(await firings(reads)).toEqual([]);
    const bad = await call("POST", "/v1/alerts", { key: p.key, body: { name: "x", kind: "anomaly", match: { organization: "o" }, channels: [] } });
    expect(bad.status).toBe(400);
  });
});
