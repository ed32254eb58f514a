import { describe, expect, it } from "vitest";
import { checkTarget, checkTargetSyntax, isPublicIPv6, parseIPv6 } from "../../src/streams/targets";
import { DEFAULT_POLICY } from "../../src/streams/transport";

describe("stream targets", () => {
  it("parses IPv6 forms", () => {
    expect(parseIPv6("::1")).toEqual([0, 0, 0, 0, 0, 0, 0, 1]);
    expect(parseIPv6("::ffff:127.0.0.1")).toEqual([0, 0, 0, 0, 0, 0xffff, 0x7f00, 1]);
    expect(parseIPv6("2606:4700::1111")).toEqual([0x2606, 0x4700, 0, 0, 0, 0, 0, 0x1111]);
    expect(parseIPv6("1:2:3:4:5:6:7:8")).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(parseIPv6("1::2::3")).toBeNull();
    expect(parseIPv6("12345::")).toBeNull();
    expect(parseIPv6("1:2:3:4:5:6:7")).toBeNull();
  });

  it("tells public IPv6 from the rest", () => {
    for (const a of ["::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1", "::ffff:192.168.0.1", "64:ff9b::7f00:1", "2002:a00:1::", "2001:db8::1"]) {
      expect(isPublicIPv6(parseIPv6(a)!), a).toBe(false);
    }
    for (const a of ["2606:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8", "64:ff9b::808:808"]) expect(isPublicIPv6(parseIPv6(a)!), a).toBe(true);
  });

  it("lets dev reach anything over http or https when ALLOW_PRIVATE_STREAM_TARGETS is true, without DNS", async () => {
    const noDns = { ...DEFAULT_POLICY, fetch: () => Promise.reject(new Error("no DNS in this test")) };
    for (const url of ["http://localhost:9000/hook", "https://127.0.0.1/", "http://[::1]:8080/", "http://receiver.internal/"]) {
      expect((await checkTarget(url, true, noDns)).ok, url).toBe(true);
      expect((await checkTarget(url, false, noDns)).ok, url).toBe(false);
    }
    expect(checkTargetSyntax("ftp://localhost/", true).ok).toBe(false);
    // Public names need DNS; when it cannot answer, the name is refused (fail closed).
    expect(await checkTarget("https://hooks.example.com/", false, noDns)).toEqual({ ok: false, reason: "url's host name could not be resolved" });
  });
});
