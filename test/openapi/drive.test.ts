import { exports } from "cloudflare:workers";
import createClient from "openapi-fetch";
import { describe, expect, it } from "vitest";
import committed from "../../src/client/openapi.json";
import { BASE, call, createProject, freshIp, ingestMany } from "../helpers";
import { checkResponse } from "./contract";

// Drives every operation of the committed OpenAPI document through openapi-fetch, a client that
// knows nothing but the document: it builds each URL from the path template and percent-encodes
// each parameter, as generated clients and Prism do. Every operation must be reached (no "No such
// route", no 400 for how a path was spelled) and answer a status and body the document declares.

type Schema = Record<string, any>;
const doc = committed as unknown as { paths: Record<string, Record<string, Schema>>; components: { schemas: Record<string, Schema> } };
const METHOD_ORDER = ["get", "post", "put", "delete"];

function resolve(schema: Schema): Schema {
  return schema.$ref ? resolve(doc.components.schemas[schema.$ref.split("/").pop()]) : schema;
}

/** The smallest value the schema allows, from the document alone: required fields only, the first enum value or example. */
function sample(schema: Schema): unknown {
  const s = resolve(schema);
  if (s.anyOf) return sample(s.anyOf[0]);
  if ("const" in s) return s.const;
  if (s.enum) return s.enum[0];
  if (s.example !== undefined) return s.example;
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== "null") : s.type;
  if (type === "object") return Object.fromEntries((s.required ?? []).map((k: string) => [k, sample(s.properties[k])]));
  if (type === "array") return Array.from({ length: s.minItems ?? 0 }, () => sample(s.items));
  if (type === "integer" || type === "number") return s.minimum ?? 1;
  if (type === "boolean") return false;
  if (type === "string") return "x".repeat(s.minLength ?? 1);
  return null;
}

interface Answer {
  op: string;
  status: number;
  text: string;
  bytes: number;
}

describe("the OpenAPI document, driven by openapi-fetch", () => {
  it("reaches every operation, and each answers as documented", async () => {
    // A full level-0 tile (256 leaves) and a partial level-1 one, so both tile operations have a 200 to give.
    const p = await createProject(undefined, { shard: 0 });
    const [event] = await ingestMany(p.key, Array.from({ length: 256 }, (_, i) => ({ action: `drive.${i % 3}`, actor: { id: "u_1" } })));
    const log = (await call("GET", "/v1/log", { key: p.key })).json.data;

    let answer: Answer | null = null;
    const client = createClient<any>({
      baseUrl: BASE,
      headers: { Authorization: `Bearer ${p.key}`, "CF-Connecting-IP": freshIp() },
      fetch: async (req: Request) => {
        const res = await exports.default.fetch(req);
        const copy = res.clone();
        const bytes = new Uint8Array(await copy.arrayBuffer());
        const text = new TextDecoder().decode(bytes);
        const { pathname } = new URL(req.url);
        checkResponse(doc, { method: req.method, path: pathname, status: res.status, contentType: res.headers.get("Content-Type"), text });
        answer = { op: `${req.method} ${pathname}`, status: res.status, text, bytes: bytes.length };
        return res;
      },
    });

    const pathValue = (name: string, template: string): string | number => {
      const values: Record<string, string | number> = {
        id: event.id,
        logId: log.log_id,
        level: template.includes("{width}") ? 1 : 0,
        index: "000",
        width: 1,
        prefix: "nosuchkey",
        name: "events.csv",
        action: "member.role.changed",
        version: 1,
      };
      if (!(name in values)) throw new Error(`no value for path parameter ${name} of ${template}`);
      return values[name];
    };

    const operations = Object.entries(doc.paths)
      .flatMap(([template, ops]) => Object.entries(ops).map(([method, op]) => ({ template, method: method as Parameters<typeof client.request>[0], op })))
      .sort((a, b) => METHOD_ORDER.indexOf(a.method) - METHOD_ORDER.indexOf(b.method));
    expect(operations.length).toBeGreaterThan(40);
    const seen: Record<string, number> = {};
    for (const { template, method, op } of operations) {
      const params: Record<string, Record<string, unknown>> = { path: {}, query: {} };
      for (const param of (op.parameters ?? []) as Schema[]) {
        if (param.in === "path") params.path[param.name] = pathValue(param.name, template);
        else if (param.in === "query" && param.required) params.query[param.name] = sample(param.schema);
      }
      const body = op.requestBody?.required ? sample(op.requestBody.content["application/json"].schema) : undefined;
      // Ask for what a success answers (a page operation answers browsers, which say so in Accept).
      const success = Object.entries(op.responses as Record<string, Schema>).filter(([status]) => status.startsWith("2"));
      const accept = [...new Set(success.flatMap(([, res]) => Object.keys(res.content ?? {})))].join(", ");
      answer = null;
      await client.request(method, template, { params, body, headers: accept ? { Accept: accept } : {}, parseAs: "text" });
      const got = answer as Answer | null;
      const where = `${op.operationId}: ${method.toUpperCase()} ${template} -> ${got?.op} ${got?.status} ${got?.text.slice(0, 200)}`;
      expect(got, where).not.toBeNull();
      expect(Object.keys(op.responses), where).toContain(String(got!.status));
      // The dev-only demo page hides itself off localhost (EMBED_DEMO_PROJECT unset) with the no-route answer, on purpose.
      if (op.operationId !== "getFeedDemo") expect(got!.text, where).not.toMatch(/No such route|^not found$|malformed tile path/m);
      seen[op.operationId] = got!.status;
    }
    // The tiles, as openapi-fetch spells their URLs, are the log's tiles.
    expect(seen.getLogTile).toBe(200);
    expect(seen.getLogPartialTile).toBe(200);
    expect(seen.createEvent).toBe(201);
    expect(seen.createEventBatch).toBe(201);
    expect(Object.keys(seen)).toHaveLength(operations.length);

    // An index past 999 holds slashes: openapi-fetch sends them as %2F, tlog clients raw; both are read as
    // the same tile (this tree has none there: 404, not the 400 of a malformed path).
    const tile = (index: string) => client.GET("/logs/{logId}/tile/{level}/{index}", { params: { path: { logId: log.log_id, level: 0, index } }, parseAs: "text" });
    await tile("x001/000");
    expect(answer).toMatchObject({ op: `GET /logs/${log.log_id}/tile/0/x001%2F000`, status: 404, text: "no such tile in this log\n" });
    await tile("000");
    expect(answer).toMatchObject({ status: 200, bytes: 256 * 32 });
    const raw = await call("GET", `/logs/${log.log_id}/tile/0/x001/000`);
    expect([raw.status, raw.text]).toEqual([404, "no such tile in this log\n"]);
    const encoded = await call("GET", `/logs/${log.log_id}/tile/1/000.p%2F1`);
    expect(encoded.status).toBe(200);
  });
});

describe("C2SP entry bundles", () => {
  it("a well-formed entry-bundle path is 404 (no bundles are published), a malformed one 400", async () => {
    const p = await createProject();
    const log = (await call("GET", "/v1/log", { key: p.key })).json.data;
    for (const path of ["tile/entries/000", "tile/entries/x001/234.p/7", "tile/entries/000.p/255", "tile/entries/x001%2F234"]) {
      const res = await call("GET", `/logs/${log.log_id}/${path}`);
      expect([res.status, res.text], path).toEqual([404, "no entry bundles: this log publishes hashes only, never event content\n"]);
    }
    for (const path of ["tile/entries/0", "tile/entries/000.p/256", "tile/entries/x000/001", "tile/entries/"]) {
      expect((await call("GET", `/logs/${log.log_id}/${path}`)).status, path).toBe(400);
    }
  });
});
