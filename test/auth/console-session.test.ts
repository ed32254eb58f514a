import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createProject, createScopedKey } from "../helpers";
import { consoleFetch, signIn } from "../pages/console-helpers";

describe("console sessions", () => {
  it("exchanges a key for a short-lived HttpOnly, Secure, SameSite=Strict cookie that holds no key", async () => {
    const p = await createProject();
    const { setCookie, cookie } = await signIn(p.key);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/Secure/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\/console/);
    const expires = Date.parse(/Expires=([^;]+)/.exec(setCookie)![1]);
    expect(expires - Date.now()).toBeGreaterThan(50 * 60_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(3600_000 + 1000);
    const secret = p.key.split("_")[3];
    expect(cookie).not.toContain(secret);
    const row = await env.DB.prepare("SELECT * FROM console_sessions WHERE project_id = ?").bind(p.id).first<Record<string, string>>();
    expect(JSON.stringify(row)).not.toContain(secret);
    const page = await consoleFetch("/console/events", { cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain(p.id);
  });

  it("refuses a wrong key, a sign-in from another origin, and a key that expired, each saying why", async () => {
    const p = await createProject();
    const wrong = await consoleFetch("/console/sign-in", { form: { api_key: `${p.key.slice(0, -3)}xyz` } });
    expect(wrong.status, `${wrong.headers.get("Location")} ${wrong.text.slice(0, 200)}`).toBe(401);
    expect(wrong.headers.get("Set-Cookie")).toBeNull();
    expect(wrong.text).toContain("That API key is not valid.");
    const foreign = await consoleFetch("/console/sign-in", { form: { api_key: p.key }, origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get("Set-Cookie")).toBeNull();
    const old = await createScopedKey(p.id, ["read"], { expiresAt: "2020-01-01T00:00:00.000Z" });
    const expired = await consoleFetch("/console/sign-in", { form: { api_key: old.key } });
    expect(expired.status).toBe(401);
    expect(expired.text).toContain("That API key expired at 2020-01-01T00:00:00.000Z.");
  });

  it("refuses a forged cookie, and the real one replayed after sign-out", async () => {
    const p = await createProject();
    const forged = await consoleFetch("/console/events", { cookie: `wtn_console=${"A".repeat(43)}` });
    expect(forged.status).toBe(303);
    expect(forged.headers.get("Location")).toBe("/console/sign-in?ended=invalid");
    const { cookie, csrf } = await signIn(p.key);
    const out = await consoleFetch("/console/sign-out", { cookie, form: { csrf } });
    expect(out.status).toBe(303);
    expect(out.headers.get("Location")).toBe("/console/sign-in?ended=signed_out");
    expect(out.headers.get("Set-Cookie")).toMatch(/wtn_console=;.*Max-Age=0/);
    const replayed = await consoleFetch("/console/events", { cookie });
    expect(replayed.status).toBe(303);
    expect(replayed.headers.get("Location")).toBe("/console/sign-in?ended=invalid");
    const api = await consoleFetch("/console/api/v1/events", { cookie });
    expect(api.status).toBe(401);
    expect(JSON.parse(api.text).error.code).toBe("UNAUTHORIZED");
  });

  it("signs out a session whose key was revoked, or that outlived its hour, with a clear message", async () => {
    const p = await createProject();
    const reader = await createScopedKey(p.id, ["read"]);
    const { cookie } = await signIn(reader.key);
    expect((await call("DELETE", `/v1/keys/${reader.prefix}`, { key: p.key })).status).toBe(200);
    const after = await consoleFetch("/console/events", { cookie });
    expect(after.status).toBe(303);
    expect(after.headers.get("Location")).toBe("/console/sign-in?ended=key_revoked");
    const notice = await consoleFetch(after.headers.get("Location")!);
    expect(notice.text).toContain("The API key you signed in with has been revoked, so you were signed out.");

    const second = await signIn(p.key);
    await env.DB.prepare("UPDATE console_sessions SET expires_at = ? WHERE project_id = ?").bind("2020-01-01T00:00:00.000Z", p.id).run();
    const late = await consoleFetch("/console/events", { cookie: second.cookie });
    expect(late.headers.get("Location")).toBe("/console/sign-in?ended=session_expired");
  });

  it("refuses POSTs without the session's CSRF token or from another origin", async () => {
    const p = await createProject();
    const { cookie, csrf } = await signIn(p.key);
    const noToken = await consoleFetch("/console/integrity/verify", { cookie, form: { csrf: "0".repeat(64) } });
    expect(noToken.status).toBe(403);
    expect(noToken.text).toContain("CSRF token does not match");
    const foreign = await consoleFetch("/console/integrity/verify", { cookie, form: { csrf }, origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
    const scripted = await consoleFetch("/console/api/v1/jobs", { cookie, method: "POST", headers: { "Content-Type": "application/json" }, body: '{"type":"verify"}' });
    expect(scripted.status).toBe(403);
    const signOut = await consoleFetch("/console/sign-out", { cookie, form: { csrf: "nope" } });
    expect(signOut.status).toBe(403);
    // The session survived the refused sign-out.
    expect((await consoleFetch("/console/events", { cookie })).status).toBe(200);
    const { results } = await p.db.prepare("SELECT id FROM jobs WHERE project_id = ?").bind(p.id).all();
    expect(results).toEqual([]);
  });
});
