import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, createProject, ingestMany } from "../helpers";
import { check } from "../model/ocsf/checker";
import { createStream, Network, waitFor, webhookBody } from "./receiver";

const HOST = "siem.acme-ocsf.com";
let net: Network;
let restore: () => void;
beforeEach(() => {
  net = new Network();
  net.dns.set(HOST, ["93.184.216.34"]);
  restore = net.install();
});
afterEach(() => restore());

describe("a stream with format ocsf", () => {
  it("delivers each event as a valid OCSF 1.3.0 event, in the class its action's catalog schema names", async () => {
    const p = await createProject();
    expect((await call("PUT", "/v1/schemas/user.login", { key: p.key, body: { ocsf: { class_uid: 3002 } } })).status).toBe(201);
    const s = await createStream(p.key, { type: "webhook", url: `https://${HOST}/ocsf`, format: "ocsf" });
    expect(s.format).toBe("ocsf");
    const stored = await ingestMany(p.key, [
      { action: "user.login", actor: { id: "u_1", type: "user" } },
      { action: "report.viewed", actor: { id: "u_1", type: "user" }, targets: [{ type: "report", id: "r_1" }] },
    ]);
    await waitFor(p.key, s.id, (x) => x.delivered_seq === stored[1].seq);
    const sent = net.at(HOST).flatMap((r) => webhookBody(r).events) as Array<Record<string, any>>;
    expect(sent.map((e) => [e.class_uid, e.metadata.uid])).toEqual([
      [3002, stored[0].id],
      [6003, stored[1].id],
    ]);
    for (const e of sent) expect(check(e), JSON.stringify(e)).toEqual([]);
    expect((await call("GET", `/v1/streams/${s.id}`, { key: p.key })).json.data.format).toBe("ocsf");
    expect((await call("POST", "/v1/streams", { key: p.key, body: { type: "webhook", url: `https://${HOST}/x`, format: "cef" } })).status).toBe(400);
  });
});
