import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, createProject } from "../helpers";
import { createStream, Network } from "./receiver";

let net: Network;
let restore: () => void;
beforeEach(() => {
  net = new Network();
  net.dns.set("hooks.acme-api-receiver.com", ["93.184.216.34"]);
  net.dns.set("sneaky.acme-receiver.com", ["10.1.2.3"]);
  net.dns.set("sneaky6.acme-receiver.com", ["93.184.216.34", "fd00::1"]);
  restore = net.install();
});
afterEach(() => restore());

describe("streams API", () => {
  it("creates a webhook stream; its secret is shown once and never again", async () => {
    const p = await createProject();
    const res = await call("POST", "/v1/streams", { key: p.key, body: { type: "webhook", url: "https://hooks.acme-api-receiver.com/in" } });
    expect(res.status).toBe(201);
    const s = res.json.data;
    expect(s).toMatchObject({ type: "webhook", url: "https://hooks.acme-api-receiver.com/in", status: "active" });
    expect(s.id).toMatch(/^str_[A-Za-z0-9]{20}$/);
    expect(s.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(atob(s.secret.slice(6))).toHaveLength(32);

    const one = await call("GET", `/v1/streams/${s.id}`, { key: p.key });
    const list = await call("GET", "/v1/streams", { key: p.key });
    expect(one.status).toBe(200);
    expect(list.json.data.map((x: any) => x.id)).toEqual([s.id]);
    for (const text of [one.text, list.text]) {
      expect(text).not.toContain(s.secret);
      expect(text).not.toContain(s.secret.slice(6));
      expect(text).not.toContain("secret");
      expect(text).not.toContain("credential");
    }
    // Delivery starts after the stream's own record in the chain (seq 1, witness.stream.created).
    expect(s.delivered_seq).toBe(1);
    expect(one.json.data).toMatchObject({ status: "active", delivered_seq: 1, lag_events: 0, last_error: null, next_attempt_at: null });
    // At rest: AES-GCM ciphertext only.
    const row = await env.DB.prepare("SELECT credential FROM streams WHERE id = ?").bind(s.id).first<{ credential: string }>();
    expect(row!.credential).toMatch(/^v1\./);
    expect(row!.credential).not.toContain(s.secret.slice(6));
  });

  it("takes Splunk and Datadog tokens, never returns them, and stores them encrypted", async () => {
    const p = await createProject();
    for (const type of ["splunk", "datadog"]) {
      const token = `tok-${type}-${crypto.randomUUID()}`;
      const res = await call("POST", "/v1/streams", { key: p.key, body: { type, url: "https://hooks.acme-api-receiver.com/x", token } });
      expect(res.status).toBe(201);
      expect(res.text).not.toContain(token);
      expect(res.json.data.secret).toBeUndefined();
      const one = await call("GET", `/v1/streams/${res.json.data.id}`, { key: p.key });
      expect(one.text).not.toContain(token);
      const row = await env.DB.prepare("SELECT credential FROM streams WHERE id = ?").bind(res.json.data.id).first<{ credential: string }>();
      expect(row!.credential).not.toContain(token);
    }
    const list = await call("GET", "/v1/streams", { key: p.key });
    expect(list.json.data).toHaveLength(2);
    expect(list.text).not.toContain("tok-");
  });

  it("validates the body", async () => {
    const p = await createProject();
    const bad = [
      { type: "s3", url: "https://hooks.acme-api-receiver.com/" },
      { type: "splunk", url: "https://hooks.acme-api-receiver.com/" },
      { type: "webhook", url: "https://hooks.acme-api-receiver.com/", token: "mine" },
      { type: "webhook", url: "not a url" },
      { type: "webhook", url: "https://hooks.acme-api-receiver.com/", filter: { actions: [] } },
      { type: "webhook", url: "https://hooks.acme-api-receiver.com/", filter: { nope: 1 } },
      { type: "webhook", url: "https://user:pw@hooks.acme-api-receiver.com/" },
    ];
    for (const body of bad) {
      const res = await call("POST", "/v1/streams", { key: p.key, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
    }
  });

  it("refuses a token that cannot be sent as a header value, instead of failing every delivery", async () => {
    const p = await createProject();
    // What deliveries would do with each: fetch's Headers throws on CR, LF and NUL, and
    // silently trims whitespace at either end (another credential than the one given).
    const survivesAsHeader = (value: string) => {
      try {
        return new Headers({ "DD-API-KEY": value }).get("DD-API-KEY") === value;
      } catch {
        return false;
      }
    };
    const broken = ["tok\r\nX-Injected: 1", "tok\n", "tok\r", "tok\u0000", "\u0000", " tok", "tok\t"];
    for (const token of broken) expect(survivesAsHeader(token), JSON.stringify(token)).toBe(false);
    // Not ASCII: no HEC token or Datadog key looks like this, and receivers disagree on the bytes.
    const bad = [...broken, "tok\u0100", "ключ", "tok\u007f"];
    for (const type of ["splunk", "datadog"]) {
      for (const token of bad) {
        const res = await call("POST", "/v1/streams", { key: p.key, body: { type, url: "https://hooks.acme-api-receiver.com/x", token } });
        expect(res.status, `${type} ${JSON.stringify(token)}`).toBe(400);
        expect(res.json.error.code).toBe("VALIDATION_ERROR");
        expect(res.json.error.details.issues[0].path).toBe("token");
        expect(res.json.error.message).toMatch(/^token: .*header/);
      }
    }
    expect((await env.DB.prepare("SELECT count(*) AS n FROM streams WHERE project_id = ?").bind(p.id).first<{ n: number }>())!.n).toBe(0);
    // Real credentials (a HEC GUID, a Datadog hex key) still pass.
    for (const [type, token] of [["splunk", crypto.randomUUID()], ["datadog", "0123456789abcdef0123456789abcdef"]]) {
      const res = await call("POST", "/v1/streams", { key: p.key, body: { type, url: "https://hooks.acme-api-receiver.com/x", token } });
      expect(res.status, type).toBe(201);
    }
  });

  it("refuses destinations that are not public https", async () => {
    const p = await createProject();
    const refused = [
      "http://hooks.acme-api-receiver.com/",
      "https://127.0.0.1/",
      "https://127.1/",
      "https://2130706433/",
      "https://0x7f000001/",
      "https://10.0.0.5/",
      "https://172.16.4.4/",
      "https://192.168.1.1/",
      "https://100.64.0.1/",
      "https://169.254.169.254/latest/meta-data/",
      "https://0.0.0.0/",
      "https://[::1]/",
      "https://[::]/",
      "https://[fd00::1]/",
      "https://[fe80::1]/",
      "https://[::ffff:127.0.0.1]/",
      "https://[::ffff:10.0.0.1]/",
      "https://[64:ff9b::a00:1]/",
      "https://localhost/",
      "https://localhost:8443/",
      "https://api.localhost/",
      "https://printer.local/",
      "https://metadata.google.internal/",
      "https://intranet/",
      // Names that resolve to private addresses (DNS-over-HTTPS), or not at all.
      "https://sneaky.acme-receiver.com/",
      "https://sneaky6.acme-receiver.com/",
      "https://unknown.acme-receiver.com/",
      "ftp://hooks.acme-api-receiver.com/",
    ];
    for (const url of refused) {
      const res = await call("POST", "/v1/streams", { key: p.key, body: { type: "webhook", url } });
      expect(res.status, url).toBe(400);
      expect(res.json.error.details.issues[0].path).toBe("url");
    }
    // Public literals are fine.
    for (const url of ["https://93.184.216.34/hook", "https://[2606:4700::1111]/hook"]) {
      const res = await call("POST", "/v1/streams", { key: p.key, body: { type: "webhook", url } });
      expect(res.status, url).toBe(201);
    }
    const { results } = await env.DB.prepare("SELECT url FROM streams WHERE project_id = ?").bind(p.id).all();
    expect(results).toHaveLength(2);
  });

  it("needs an API key: embed tokens get 403, nothing gets 401", async () => {
    const p = await createProject();
    const token = (await call("POST", "/v1/embed/token", { key: p.key, body: {} })).json.data.token;
    for (const [method, path] of [["GET", "/v1/streams"], ["POST", "/v1/streams"], ["GET", "/v1/streams/str_x"], ["DELETE", "/v1/streams/str_x"]]) {
      const res = await call(method, path, { key: token, body: method === "POST" ? { type: "webhook", url: "https://hooks.acme-api-receiver.com/" } : undefined });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect((await call(method, path)).status).toBe(401);
    }
  });

  it("keeps projects apart", async () => {
    const a = await createProject();
    const b = await createProject();
    const s = await createStream(a.key, { type: "webhook", url: "https://hooks.acme-api-receiver.com/a" });
    expect((await call("GET", `/v1/streams/${s.id}`, { key: b.key })).status).toBe(404);
    expect((await call("DELETE", `/v1/streams/${s.id}`, { key: b.key })).status).toBe(404);
    expect((await call("POST", `/v1/streams/${s.id}/replay`, { key: b.key, body: { from_seq: 1 } })).status).toBe(404);
    expect((await call("GET", "/v1/streams", { key: b.key })).json.data).toEqual([]);
    expect((await call("GET", `/v1/streams/${s.id}`, { key: a.key })).status).toBe(200);
  });

  it("deletes a stream", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: "https://hooks.acme-api-receiver.com/d" });
    expect((await call("DELETE", `/v1/streams/${s.id}`, { key: p.key })).status).toBe(204);
    expect((await call("GET", `/v1/streams/${s.id}`, { key: p.key })).status).toBe(404);
    expect((await call("GET", "/v1/streams", { key: p.key })).json.data).toEqual([]);
    expect((await call("DELETE", `/v1/streams/${s.id}`, { key: p.key })).status).toBe(404);
  });
});
