import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { CSV_COLUMNS } from "../../src/model/csv";
import { EXPORT_BATCH } from "../../src/reads/export-stream";
import { call, createProject, ingestMany, parseCsv } from "../helpers";
import { deleteExpiredExports, deleteStagedExports } from "../../src/storage/staged-exports";

const T = (minute: number) => new Date(Date.UTC(2026, 4, 5, 5, minute)).toISOString();
const exportOf = (key: string, query: string) => call("GET", `/v1/exports?${query}`, { key });

async function seeded() {
  const p = await createProject();
  const stored = await ingestMany(p.key, [
    { action: "user.login", organization: "org_a", actor: { id: "u_1", name: "Ann" }, occurred_at: T(1) },
    { action: "=HYPERLINK(\"http://evil.test\",\"x\")", organization: "+1-555", actor: { id: "@admin", name: '-2+3, "quoted"\nnext line' }, targets: [{ type: "doc", id: "d1", name: "Plan, v2" }], metadata: { note: "=cmd|' /C calc'!A0" }, occurred_at: T(2) },
    { action: "doc.shared", organization: "org_b", actor: { id: "u_2", name: "\tTabbed" }, occurred_at: T(3) },
  ]);
  return { ...p, stored };
}

/** The exported CSV as objects keyed by column, after checking the header row. */
function csvRecords(text: string) {
  const [header, ...rows] = parseCsv(text);
  expect(header).toEqual([...CSV_COLUMNS]);
  return rows.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i]])));
}

async function staged(projectId: string) {
  const { objects } = await env.EXPORTS.list({ prefix: `exports/${projectId}/` });
  return objects;
}

describe("GET /v1/exports", () => {
  it("needs a key and a known format", async () => {
    expect((await exportOf("", "format=csv")).status).toBe(401);
    const p = await createProject();
    for (const query of ["", "format=xml", "format=CSV", "format=csv&format=json", "format=csv&limit=5&date_from=bad"]) {
      const res = await exportOf(p.key, query);
      expect(res.status, query).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
    }
  });

  it("refuses embed tokens: exports need an API key", async () => {
    const p = await seeded();
    const minted = await call("POST", "/v1/embed/token", { key: p.key, body: {} });
    expect(minted.status).toBe(201);
    const res = await exportOf(minted.json.data.token, "format=json");
    expect(res.status).toBe(403);
    expect(res.json.error.code).toBe("FORBIDDEN");
    expect(await staged(p.id)).toEqual([]);
  });

  it("downloads CSV: attachment headers, one header row, newest first, nested values as JSON", async () => {
    const p = await seeded();
    const res = await exportOf(p.key, "format=csv");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("text/csv; charset=utf-8");
    expect(res.headers.get("Content-Disposition")).toMatch(new RegExp(`^attachment; filename="witness-${p.id}-\\d{4}-\\d{2}-\\d{2}\\.csv"$`));
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const records = csvRecords(res.text);
    expect(records.map((r) => r.id)).toEqual([p.stored[2].id, p.stored[1].id, p.stored[0].id]);
    const ann = records[2];
    expect(ann).toMatchObject({ action: "user.login", actor_id: "u_1", actor_name: "Ann", seq: String(p.stored[0].seq), targets: "[]", metadata: "{}" });
    expect(ann.hash).toBe(p.stored[0].hash);
  });

  it("neutralizes formula cells and escapes quotes, commas and line breaks", async () => {
    const p = await seeded();
    const res = await exportOf(p.key, "format=csv");
    const hostile = csvRecords(res.text)[1];
    expect(hostile.action).toBe("'=HYPERLINK(\"http://evil.test\",\"x\")");
    expect(hostile.organization).toBe("'+1-555");
    expect(hostile.actor_id).toBe("'@admin");
    expect(hostile.actor_name).toBe("'-2+3, \"quoted\"\nnext line");
    expect(JSON.parse(hostile.targets)).toEqual([{ type: "doc", id: "d1", name: "Plan, v2" }]);
    expect(JSON.parse(hostile.metadata)).toEqual({ note: "=cmd|' /C calc'!A0" });
    expect(csvRecords(res.text)[0].actor_name).toBe("'\tTabbed");
    // Nothing but the neutralized cells starts with a formula character.
    for (const record of csvRecords(res.text)) {
      for (const value of Object.values(record)) expect(value).not.toMatch(/^[=+\-@\t\r]/);
    }
  });

  it("neutralizes formulas after each ; or , inside a cell, for spreadsheets that split there", async () => {
    const p = await createProject();
    const attack = "report.generated;=1+2";
    await ingestMany(p.key, [{ action: attack, actor: { id: "u_1", name: "Ann;@SUM(A1),-2+3" }, metadata: { x: "a;=cmd|' /C calc'!A0" } }]);
    const res = await exportOf(p.key, "format=csv");
    const [record] = csvRecords(res.text);
    expect(record.action).toBe("report.generated;'=1+2");
    expect(record.actor_name).toBe("Ann;'@SUM(A1),'-2+3");
    expect(record.metadata).toBe(`{"x":"a;'=cmd|' /C calc'!A0"}`);
    // A reader that cuts the file at every ; (or , or line break), quotes or not, finds no formula.
    const cells = res.text.split(/[;,\r\n]/).map((c) => c.replace(/^"/, ""));
    expect(cells.filter((c) => /^[=+\-@\t]/.test(c))).toEqual([]);
    expect(cells).toContain("'=1+2\"");
  });

  it("downloads JSON: one array of events in the list's shape", async () => {
    const p = await seeded();
    const res = await exportOf(p.key, "format=json");
    expect(res.headers.get("Content-Type")).toBe("application/json; charset=utf-8");
    expect(res.headers.get("Content-Disposition")).toMatch(/^attachment; filename="witness-.+-\d{4}-\d{2}-\d{2}\.json"$/);
    const list = await call("GET", "/v1/events", { key: p.key });
    expect(res.json).toEqual(list.json.data);
  });

  it("applies the list filters", async () => {
    const p = await seeded();
    const ids = async (query: string) => (await exportOf(p.key, `format=json&${query}`)).json.map((e: any) => e.id);
    expect(await ids("organization=org_a")).toEqual([p.stored[0].id]);
    expect(await ids("actions=user.login,doc.shared")).toEqual([p.stored[2].id, p.stored[0].id]);
    expect(await ids(`date_from=${T(2)}&date_to=${T(2)}`)).toEqual([p.stored[1].id]);
    expect(await ids("actor_id=nobody")).toEqual([]);
    expect(await ids("action=a&actions=b")).toEqual([]);
    expect(csvRecords((await exportOf(p.key, "format=csv&actor_id=nobody")).text)).toEqual([]);
  });

  it("stages each batch in R2 under the project and streams exactly what it staged", async () => {
    const p = await seeded();
    const res = await exportOf(p.key, "format=csv");
    const objects = await staged(p.id);
    expect(objects).toHaveLength(1);
    expect(objects[0].key).toMatch(new RegExp(`^exports/${p.id}/[0-9a-f-]{36}/000000$`));
    expect(await (await env.EXPORTS.get(objects[0].key))!.text()).toBe(res.text);
  });

  it("never exports another project's events", async () => {
    const a = await seeded();
    const b = await seeded();
    const json = (await exportOf(a.key, "format=json")).json;
    expect(json.map((e: any) => e.project_id)).toEqual([a.id, a.id, a.id]);
    const csv = (await exportOf(a.key, "format=csv")).text;
    for (const e of b.stored) expect(csv).not.toContain(e.id);
    expect(await staged(b.id)).toEqual([]);
  });

  it("exports 5,000 events complete and in order, in both formats, over several staged batches", async () => {
    const p = await createProject();
    const events = Array.from({ length: 5000 }, (_, i) => ({
      action: `bulk.${i % 7}`,
      actor: { id: `u_${i % 13}`, name: i % 500 === 0 ? 'Quote "me", maybe' : `User ${i}` },
      // Many events share an instant, so batches split inside ties.
      occurred_at: new Date(Date.UTC(2026, 0, 1) + Math.floor(i / 250) * 1000).toISOString(),
    }));
    const stored = await ingestMany(p.key, events);
    const expected = stored
      .sort((x, y) => (x.occurred_at === y.occurred_at ? y.seq - x.seq : x.occurred_at < y.occurred_at ? 1 : -1))
      .map((e) => e.id);

    const csv = await exportOf(p.key, "format=csv");
    expect(csvRecords(csv.text).map((r) => r.id)).toEqual(expected);
    const json = await exportOf(p.key, "format=json");
    expect(json.json.map((e: any) => e.id)).toEqual(expected);

    const objects = await staged(p.id);
    const batches = Math.floor(5000 / EXPORT_BATCH) + 1;
    expect(objects).toHaveLength(2 * batches);
    const exportIds = new Set(objects.map((o) => o.key.split("/")[2]));
    expect(exportIds.size).toBe(2);
    for (const id of exportIds) {
      const parts = objects.filter((o) => o.key.split("/")[2] === id).sort((x, y) => (x.key < y.key ? -1 : 1));
      const whole = (await Promise.all(parts.map(async (o) => (await env.EXPORTS.get(o.key))!.text()))).join("");
      expect([csv.text, json.text]).toContain(whole);
    }
  }, 60_000);
});

describe("staged export cleanup", () => {
  it("the daily cron deletes staged objects older than 24 h; erasure deletes a project's at once", async () => {
    const a = await seeded();
    const b = await seeded();
    await exportOf(a.key, "format=csv");
    await exportOf(b.key, "format=json");
    expect(await deleteExpiredExports(env, new Date())).toBe(0);
    expect(await staged(a.id)).toHaveLength(1);

    expect(await deleteStagedExports(env, a.id)).toBe(1);
    expect(await staged(a.id)).toEqual([]);
    expect(await staged(b.id)).toHaveLength(1);

    const dayLater = new Date(Date.now() + 24 * 60 * 60 * 1000 + 60_000);
    expect(await deleteExpiredExports(env, dayLater)).toBeGreaterThanOrEqual(1);
    expect(await staged(b.id)).toEqual([]);
  });
});
