import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import { BASE, call, freshIp } from "../helpers";

/** Polls GET /v1/jobs/:id until the job ends; every progress seen on the way is kept. */
export async function waitForJob(key: string, id: string, seen: Array<{ done: number; total: number; status: string }> = [], timeoutMs = 60_000) {
  const until = Date.now() + timeoutMs;
  // One address for the whole wait: polls every 25 ms spend its budget, and no other test's.
  const ip = freshIp();
  for (;;) {
    const res = await call("GET", `/v1/jobs/${id}`, { key, ip });
    expect(res.status).toBe(200);
    const job = res.json.data;
    seen.push({ ...job.progress, status: job.status });
    if (["succeeded", "failed", "canceled"].includes(job.status)) return job;
    if (Date.now() > until) throw new Error(`job ${id} still ${job.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Exact bytes of a GET, as a client receives them. */
export async function getBytes(key: string, path: string, headers: Record<string, string> = {}) {
  const res = await exports.default.fetch(new Request(`${BASE}${path}`, { headers: { Authorization: `Bearer ${key}`, "CF-Connecting-IP": freshIp(), ...headers } }));
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
}

export function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) (out.set(p, at), (at += p.length));
  return out;
}

export const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** Every file of a finished export job, concatenated in order. */
export async function jobBytes(key: string, job: { files: Array<{ url: string; bytes: number }> }) {
  const parts: Uint8Array[] = [];
  for (const f of job.files) {
    const res = await getBytes(key, f.url);
    expect(res.status).toBe(200);
    expect(res.bytes.length).toBe(f.bytes);
    parts.push(res.bytes);
  }
  return concat(parts);
}
