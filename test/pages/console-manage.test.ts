import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { COSTS } from "../../src/auth/rate-cost";
import { call, createProject, freshIp, ingestMany } from "../helpers";
import { createStream, Network } from "../streams/receiver";
import { consoleFetch, signIn } from "./console-helpers";

let net: Network;
let restore: () => void;
beforeEach(() => {
  net = new Network();
  net.dns.set("hooks.console-receiver.com", ["93.184.216.34"]);
  restore = net.install();
});
afterEach(() => restore());

const remaining = (res: { headers: Headers }) => Number(res.headers.get("RateLimit-Remaining"));

describe("console budget and streams", () => {
  it("counts a console page once against the caller's per-IP budget, and a search through the script API at its own price", async () => {
    const p = await createProject();
    await ingestMany(p.key, [{ action: "budget.one" }]);
    const { cookie } = await signIn(p.key);
    const ip = freshIp();
    const headers = { "CF-Connecting-IP": ip };
    const first = await consoleFetch("/console/events", { cookie, headers });
    expect(first.status).toBe(200);
    expect(first.text).toContain("budget.one");
    const limit = Number(first.headers.get("RateLimit-Limit"));
    // The page and its in-process GET /v1/events: one unit, not two.
    expect(remaining(first)).toBe(limit - 1);
    const again = await consoleFetch("/console/events", { cookie, headers });
    // The chart's rollups and the log's size cost a unit each.
    expect(remaining(again)).toBe(limit - 4);
    // A search costs what it costs from the API directly (5), not 5 plus the page's unit.
    const search = await consoleFetch("/console/api/v1/events/search?q=budget", { cookie, headers });
    expect(search.status).toBe(200);
    expect(remaining(search)).toBe(limit - 6 - COSTS.search);
    // A page making two calls (the log and the verify jobs) pays for the second.
    expect((await consoleFetch("/console/integrity", { cookie, headers })).status).toBe(200);
    // Nothing a client sends makes a request free.
    const direct = await call("GET", "/v1/events", { key: p.key, headers });
    expect(direct.headers.get("RateLimit-Remaining")).toBe(String(limit - 6 - COSTS.search - 3));
  });

  it("pauses and resumes a stream from the streams page (admin), each recorded in the chain", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: "https://hooks.console-receiver.com/in" });
    const { cookie, csrf } = await signIn(p.key);
    const page = await consoleFetch("/console/streams", { cookie });
    expect(page.text).toContain(`action="/console/streams/${s.id}/pause"`);
    expect(page.text).toContain("Pause delivery");
    const paused = await consoleFetch(`/console/streams/${s.id}/pause`, { cookie, form: { csrf } });
    expect(paused.status).toBe(303);
    const after = await consoleFetch("/console/streams", { cookie });
    expect(after.text).toMatch(/<span class="badge ">paused<\/span>/);
    expect(after.text).toContain(`action="/console/streams/${s.id}/resume"`);
    expect((await call("GET", `/v1/streams/${s.id}`, { key: p.key })).json.data.status).toBe("paused");
    // A form without the session's CSRF token changes nothing.
    expect((await consoleFetch(`/console/streams/${s.id}/resume`, { cookie, form: { csrf: "forged" } })).status).toBe(403);
    expect((await consoleFetch(`/console/streams/${s.id}/resume`, { cookie, form: { csrf } })).status).toBe(303);
    expect((await call("GET", `/v1/streams/${s.id}`, { key: p.key })).json.data.status).toBe("active");
    const chain = await call("GET", "/v1/events?actions=witness.stream.paused,witness.stream.resumed", { key: p.key });
    expect(chain.json.data.map((e: any) => e.action)).toEqual(["witness.stream.resumed", "witness.stream.paused"]);
  });
});
