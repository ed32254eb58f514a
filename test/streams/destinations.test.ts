/**
 * STREAM_DESTINATIONS, the operator's allow-list of stream hosts: its
 * patterns, the 400 at creation, and the check before every delivery attempt
 * (a list tightened after a stream was made stops that stream).
 */
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { destinationAllowed, parseDestinations, parsePattern } from "../../src/streams/destinations";
import { call, createProject, ingestMany } from "../helpers";
import { createStream, events, Network, waitFor } from "./receiver";

const allowed = (list: string, url: string) => destinationAllowed(parseDestinations(list), new URL(url));

describe("host patterns", () => {
  it("an empty list allows any host; a list allows only what it names", () => {
    for (const list of ["", " ", " , ,"]) expect(parseDestinations(list).any).toBe(true);
    expect(allowed("", "https://anything.example.org/")).toBe(true);
    const list = "splunk.example.com, *.hooks.example.com ,dd.example.com:8443";
    for (const url of [
      "https://splunk.example.com/services/collector",
      "https://splunk.example.com:8088/services/collector", // no port in the pattern: any port
      "https://SPLUNK.Example.COM./x", // case and the root dot do not matter
      "https://a.hooks.example.com/",
      "https://a.b.hooks.example.com/", // subdomains at any depth
      "https://dd.example.com:8443/api",
    ]) expect(allowed(list, url), url).toBe(true);
    for (const url of [
      "https://hooks.example.com/", // *.hooks.example.com does not name the apex
      "https://evilhooks.example.com/",
      "https://splunk.example.com.attacker.net/",
      "https://notsplunk.example.com/",
      "https://sub.splunk.example.com/", // an exact name does not take subdomains
      "https://dd.example.com/api", // 443, not 8443
      "https://dd.example.com:8444/api",
      "https://attacker.net/",
    ]) expect(allowed(list, url), url).toBe(false);
  });

  it("compares hosts as the URL parser writes them: IDN, addresses", () => {
    expect(allowed("bücher.example", "https://xn--bcher-kva.example/")).toBe(true);
    expect(allowed("*.bücher.example", "https://shop.bücher.example/")).toBe(true);
    expect(allowed("93.184.216.34", "https://93.184.216.34/hook")).toBe(true);
    expect(allowed("93.184.216.34", "https://93.184.216.35/hook")).toBe(false);
    expect(allowed("[2606:4700:0::1111]", "https://[2606:4700::1111]/hook")).toBe(true);
    expect(allowed("[2606:4700::1111]:8443", "https://[2606:4700::1111]:8443/hook")).toBe(true);
    expect(allowed("[2606:4700::1111]:8443", "https://[2606:4700::1111]/hook")).toBe(false);
  });

  it("refuses entries that are not host patterns, and such a list allows nothing (fails closed)", () => {
    for (const entry of [
      "https://splunk.example.com", "splunk.example.com/services", "splunk.example.com?x", "user@splunk.example.com",
      "*", "*.", "*.*.example.com", "a*.example.com", "example.*", "splunk.example.com:0", "splunk.example.com:65536",
      "splunk.example.com:http", "*.93.184.216.34", "*.[2606:4700::1111]", "2606:4700::1111", "splunk example.com",
    ]) expect(parsePattern(entry), entry).toBeNull();
    const list = parseDestinations("https://splunk.example.com, *");
    expect(list).toMatchObject({ any: false, patterns: [], invalid: ["https://splunk.example.com", "*"] });
    expect(destinationAllowed(list, new URL("https://splunk.example.com/"))).toBe(false);
    expect(parsePattern("Splunk.Example.com.:8088")).toEqual({ host: "splunk.example.com", subdomains: false, port: 8088 });
    expect(parsePattern("*.Example.com")).toEqual({ host: "example.com", subdomains: true, port: null });
  });
});

describe("STREAM_DESTINATIONS in the service", () => {
  const HOSTS = ["siem.acme-receiver.com", "a.hooks.acme-receiver.com", "hooks.acme-receiver.com", "attacker.example.net"];
  let net: Network;
  let restore: () => void;
  let original: string;
  beforeEach(() => {
    net = new Network();
    for (const h of HOSTS) net.dns.set(h, ["93.184.216.34"]);
    restore = net.install();
    original = env.STREAM_DESTINATIONS;
  });
  afterEach(() => {
    restore();
    env.STREAM_DESTINATIONS = original;
  });

  it("refuses to create a stream to a host the list does not name (400 on url), and creates the others", async () => {
    env.STREAM_DESTINATIONS = "siem.acme-receiver.com, *.hooks.acme-receiver.com";
    const p = await createProject();
    for (const url of ["https://attacker.example.net/collect", "https://hooks.acme-receiver.com/x", "https://siem.acme-receiver.com.attacker.example.net/"]) {
      const res = await call("POST", "/v1/streams", { key: p.key, body: { type: "webhook", url } });
      expect(res.status, url).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
      expect(res.json.error.details.issues[0]).toMatchObject({ path: "url", message: expect.stringContaining("STREAM_DESTINATIONS") });
    }
    for (const url of ["https://siem.acme-receiver.com/in", "https://siem.acme-receiver.com:8088/in", "https://a.hooks.acme-receiver.com/in"]) {
      expect((await call("POST", "/v1/streams", { key: p.key, body: { type: "webhook", url } })).status, url).toBe(201);
    }
    const { results } = await env.DB.prepare("SELECT url FROM streams WHERE project_id = ? ORDER BY created_at").bind(p.id).all();
    expect(results.map((r) => r.url)).toEqual(["https://siem.acme-receiver.com/in", "https://siem.acme-receiver.com:8088/in", "https://a.hooks.acme-receiver.com/in"]);
    // The list is checked before any lookup: a refused host is never resolved.
    env.STREAM_DESTINATIONS = "siem.acme-receiver.com";
    net.dns.delete("attacker.example.net");
    const res = await call("POST", "/v1/streams", { key: p.key, body: { type: "webhook", url: "https://attacker.example.net/" } });
    expect(res.json.error.details.issues[0].message).toContain("STREAM_DESTINATIONS");
  });

  it("stops a stream at its next attempt once the list no longer names its host, and replay is refused until it does", async () => {
    env.STREAM_DESTINATIONS = "siem.acme-receiver.com";
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: "https://siem.acme-receiver.com/feed" });
    const base = s.delivered_seq;
    await ingestMany(p.key, events(3));
    await waitFor(p.key, s.id, (x) => x.delivered_seq === base + 3);
    const sent = net.at("siem.acme-receiver.com").length;

    // The operator tightens the list (a deploy); the stream was made while it allowed the host.
    env.STREAM_DESTINATIONS = "*.hooks.acme-receiver.com";
    await ingestMany(p.key, events(3));
    const stopped = await waitFor(p.key, s.id, (x) => x.status === "disabled");
    expect(stopped).toMatchObject({ delivered_seq: base + 3, next_attempt_at: null });
    expect(stopped.last_error).toBe(
      "destination refused: url's host siem.acme-receiver.com is not among the stream destinations this deployment allows (STREAM_DESTINATIONS)",
    );
    expect(net.at("siem.acme-receiver.com").length).toBe(sent);
    expect((await env.DB.prepare("SELECT status FROM streams WHERE id = ?").bind(s.id).first())?.status).toBe("disabled");
    const refused = await call("POST", `/v1/streams/${s.id}/replay`, { key: p.key, body: { from_seq: base + 4 } });
    expect(refused.status).toBe(400);
    expect(refused.json.error.details.issues[0]).toMatchObject({ path: "url", message: expect.stringContaining("STREAM_DESTINATIONS") });
    expect((await waitFor(p.key, s.id, () => true)).status).toBe("disabled");

    // Allowed again: a replay picks up where it stopped.
    env.STREAM_DESTINATIONS = "siem.acme-receiver.com";
    expect((await call("POST", `/v1/streams/${s.id}/replay`, { key: p.key, body: { from_seq: base + 4 } })).status).toBe(202);
    const resumed = await waitFor(p.key, s.id, (x) => x.delivered_seq === base + 7 && x.status === "active"); // + the replay's record
    expect(resumed.consecutive_failures).toBe(0);
  });
});
