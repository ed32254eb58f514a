import { createMiddleware } from "hono/factory";
import { PROJECT_WALK_LIMIT, WALK_RENEW_MS, WALK_TTL_MS, type WalkGrant } from "../auth/project-walk";
import { requestCost } from "../auth/rate-cost";
import { ApiError } from "../lib/errors";
import type { RateLimiter } from "../durable/rate-limiter.do";
import type { AppEnv } from "./app-env";
import { projectOf } from "./credential";

/**
 * Verify and export walk the whole project: one at a time per project, drawn
 * from the project's budget (see auth/project-walk.ts), after the per-IP
 * price was paid and the key checked. `untilBodyEnds`: the work happens while
 * the body streams (export), so the walk ends when the body is fully sent,
 * cancelled by the client or broken by an error, not when the handler returns.
 * A refusal is a 429 whose RateLimit-* headers describe the project's budget.
 */
export function projectWalk(options: { untilBodyEnds: boolean }) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const projectId = projectOf(c.get("credential"));
    const limiter = c.env.RATE_LIMITER.get(c.env.RATE_LIMITER.idFromName(`project:${projectId}`));
    const cost = requestCost(c.req.method, c.req.path);
    const grant = await limiter.startWalk(PROJECT_WALK_LIMIT, cost, WALK_TTL_MS);
    if (!grant.token) {
      c.set("rate", grant.rate);
      throw walkRefused(grant, cost);
    }
    const walk = holdWalk(limiter, grant.token);
    try {
      await next();
    } catch (err) {
      await walk.end();
      throw err;
    }
    const body = c.res.body;
    // HEAD: Hono sends the GET handler's headers and drops its body unread and uncancelled, so nothing would end the walk.
    if (!options.untilBodyEnds || !body || c.res.status !== 200 || c.error || c.req.method === "HEAD") return walk.end();
    walk.streaming();
    c.res = new Response(whenSettled(body, walk.end, walk.moved), c.res);
  });
}

function walkRefused(grant: WalkGrant, cost: number): ApiError {
  const { limit, remaining, reset } = grant.rate;
  if (grant.busy) {
    const wait = grant.rate.retryAfter ?? reset;
    return new ApiError("RATE_LIMITED", `Another verify or export of this project is running and only one runs at a time; retry in ${wait} s`, {
      reason: "in_flight",
      retry_after: wait,
    });
  }
  return new ApiError(
    "RATE_LIMITED",
    `This project's verifies and exports may spend ${limit} units a minute, from any number of clients; this one costs ${cost} and ${remaining} are left; retry in ${reset} s`,
    { reason: "project_budget", limit, cost, retry_after: reset },
  );
}

/**
 * Renews the lease while the walk works and returns what ends it (once,
 * however often called). The handler works until it returns; a streamed body
 * works only as the client reads it, so a body nobody reads (or sends on)
 * lets its lease lapse. A lease not renewed expires on its own: a crashed
 * isolate or a failed release blocks its project for WALK_TTL_MS at most.
 */
function holdWalk(limiter: DurableObjectStub<RateLimiter>, token: string) {
  let handling = true;
  let moved = false;
  let renewing: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    if (!handling && !moved) return;
    moved = false;
    renewing = limiter.renewWalk(token, WALK_TTL_MS).catch(() => false);
  }, WALK_RENEW_MS);
  let ended: Promise<void> | null = null;
  return {
    streaming: () => void (handling = false),
    moved: () => void (moved = true),
    end: () =>
      (ended ??= (async () => {
        clearInterval(timer);
        // A renewal landing after the release would take the project again.
        await renewing;
        await limiter.endWalk(token).catch(() => {});
      })()),
  };
}

/**
 * `body` as it is, calling `settle` (and waiting for it) before the client
 * sees its end, its error or its cancellation, and `moved` on every chunk.
 */
export function whenSettled(body: ReadableStream<Uint8Array>, settle: () => Promise<void>, moved = () => {}): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (err) {
          await settle();
          controller.error(err);
          return;
        }
        if (!chunk.done) {
          moved();
          return controller.enqueue(chunk.value);
        }
        await settle();
        controller.close();
      },
      async cancel(reason) {
        try {
          await reader.cancel(reason);
        } finally {
          await settle();
        }
      },
    },
    // Pull only as the client reads: the walk's own stream decides how far ahead it works.
    { highWaterMark: 0 },
  );
}
