/**
 * A destination played by the tests. The stream objects run in the tests'
 * isolate, so setStreamPolicy({ fetch }) routes their requests here: the
 * DNS-over-HTTPS resolver (answers from `dns`) and the receivers, by host.
 */
import { expect } from "vitest";
import { call } from "../helpers";
import { DEFAULT_POLICY, setStreamPolicy } from "../../src/streams/transport";

export type Mode = "ok" | "timeout" | "refused" | number;

export interface Received {
  url: string;
  headers: Headers;
  body: string;
  /** Date.now() when it arrived. */
  arrivedAt: number;
}

export class Network {
  /** name -> addresses its A/AAAA records give. */
  readonly dns = new Map<string, string[]>();
  readonly received: Received[] = [];
  /** How each host answers now; default ok. */
  readonly modes = new Map<string, Mode>();
  answerBody = "ok";
  /** Requests in "timeout" mode received and neither answered nor given up by the sender yet. */
  hanging = 0;

  readonly fetch: typeof fetch = async (input, init) => {
    const req = new Request(input, init);
    const url = new URL(req.url);
    if (url.origin + url.pathname === DEFAULT_POLICY.dohUrl) {
      const name = url.searchParams.get("name")!;
      const type = url.searchParams.get("type") === "AAAA" ? 28 : 1;
      const all = this.dns.get(name);
      if (!all) return Response.json({ Status: 3, Answer: [] });
      const answers = all.filter((a) => (type === 28 ? a.includes(":") : !a.includes(":"))).map((data) => ({ type, data }));
      return Response.json({ Status: 0, Answer: answers });
    }
    const mode = this.modes.get(url.hostname) ?? "ok";
    if (mode === "refused") throw new TypeError("Network connection lost: connection refused");
    if (mode === "timeout") {
      // Received but never answered: the sender cannot tell whether it arrived.
      this.received.push(await this.record(req));
      this.hanging++;
      return new Promise<Response>((_, reject) =>
        init?.signal?.addEventListener("abort", () => {
          this.hanging--;
          reject(new Error("aborted"));
        }),
      );
    }
    this.received.push(await this.record(req));
    if (mode === "ok") return new Response(this.answerBody, { status: 200 });
    return new Response(`destination says no ${"x".repeat(5000)}`, { status: mode });
  };

  private async record(req: Request): Promise<Received> {
    const arrivedAt = Date.now();
    let body: string;
    if (req.headers.get("Content-Encoding") === "gzip") {
      body = await new Response(req.body!.pipeThrough(new DecompressionStream("gzip"))).text();
    } else {
      body = await req.text();
    }
    return { url: req.url, headers: req.headers, body, arrivedAt };
  }

  /** Receipts of one host, in arrival order. */
  at(host: string): Received[] {
    return this.received.filter((r) => new URL(r.url).hostname === host);
  }

  install(overrides: Partial<typeof DEFAULT_POLICY> = {}): () => void {
    return setStreamPolicy({ fetch: this.fetch, timeoutMs: 150, baseBackoffMs: 20, maxBackoffMs: 200, ...overrides });
  }
}

/** Polls the stream's status until `done` holds (or fails after timeoutMs). */
export async function waitFor(key: string, id: string, done: (s: any) => boolean, timeoutMs = 60_000): Promise<any> {
  const end = Date.now() + timeoutMs;
  let last: any;
  while (Date.now() < end) {
    const res = await call("GET", `/v1/streams/${id}`, { key });
    expect(res.status).toBe(200);
    last = res.json.data;
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`stream ${id} never got there; last status ${JSON.stringify(last)}`);
}

export async function createStream(key: string, body: unknown) {
  const res = await call("POST", "/v1/streams", { key, body });
  if (res.status !== 201) throw new Error(`POST /v1/streams answered ${res.status}: ${res.text}`);
  return res.json.data;
}

export function events(n: number, make: (i: number) => Record<string, unknown> = () => ({})) {
  return Array.from({ length: n }, (_, i) => ({ action: "user.login", actor: { id: `u_${i}`, type: "user" }, ...make(i) }));
}

/** Parses a webhook delivery's body. */
export function webhookBody(r: Received): { type: string; timestamp: string; project_id: string; events: any[] } {
  return JSON.parse(r.body);
}
