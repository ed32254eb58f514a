import { DurableObject } from "cloudflare:workers";
import { asInvocation, currentInvocation, meterEnabled, within, type Invocation } from "./meter";
import { meterEnv, meterFetch, meterState } from "./metered-bindings";

/** A request's invocation name: method and path, with ids folded so one route is one name. */
export function requestName(request: Request): string {
  const path = new URL(request.url).pathname
    .split("/")
    // Ids, tile coordinates and the like: any segment with a digit (but the version), or a long one.
    .map((segment) => ((/\d/.test(segment) && !/^v\d+$/.test(segment)) || segment.length > 24 ? ":id" : segment))
    .join("/");
  return `${request.method} ${path}`;
}

/** The Worker's handlers, each call one metered invocation when the env asks for it. */
export function meteredHandlers<E extends { METER?: string }>(handlers: {
  fetch: (request: Request, env: E, ctx: ExecutionContext) => Response | Promise<Response>;
  scheduled: (controller: ScheduledController, env: E, ctx: ExecutionContext) => Promise<void>;
}) {
  return {
    fetch(request: Request, env: E, ctx: ExecutionContext) {
      if (!meterEnabled(env)) return handlers.fetch(request, env, ctx);
      startMetering();
      return asInvocation(requestName(request), async () => bodyWithin(await handlers.fetch(request, meterEnv(env), ctx), currentInvocation()));
    },
    scheduled(controller: ScheduledController, env: E, ctx: ExecutionContext) {
      if (!meterEnabled(env)) return handlers.scheduled(controller, env, ctx);
      startMetering();
      return asInvocation("cron", () => handlers.scheduled(controller, meterEnv(env), ctx));
    },
  };
}

/**
 * The response with its body read inside the request's invocation: a
 * streamed body (an export) goes on querying D1 after the handler returned,
 * and the runtime would otherwise run those reads outside any invocation.
 */
function bodyWithin(response: Response, invocation: Invocation | undefined): Response {
  if (!response.body || !invocation) return response;
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>(
    {
      pull: (controller) =>
        within(invocation, () => reader.read()).then(({ done, value }) => (done ? controller.close() : controller.enqueue(value))),
      cancel: (reason) => within(invocation, () => reader.cancel(reason)),
    },
    { highWaterMark: 0 },
  );
  return new Response(body, response);
}

/** Set once any handler or object of this isolate saw METER = "enforce" (the setting is per deployment). */
let metering = false;
function startMetering() {
  if (metering) return;
  metering = true;
  meterFetch();
}

type ObjectClass = new (ctx: DurableObjectState, env: Env) => object;

/**
 * A Durable Object class whose every call (RPC method, fetch, alarm) is one
 * metered invocation, with its env metered, when the env asks for it.
 */
export function meteredObject<C extends ObjectClass>(Base: C): C {
  // Its own methods and those of the classes it extends (a ledger's read side is a base class), up to the platform's.
  const methods = new Set<string>();
  for (let proto = Base.prototype; proto && proto !== DurableObject.prototype && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name !== "constructor" && typeof Object.getOwnPropertyDescriptor(proto, name)?.value === "function") methods.add(name);
    }
  }
  const Metered = class extends (Base as ObjectClass) {
    constructor(ctx: DurableObjectState, env: Env) {
      if (meterEnabled(env)) meterState(ctx);
      super(ctx, meterEnabled(env) ? meterEnv(env) : env);
      if (meterEnabled(env)) startMetering();
    }
  };
  for (const name of methods) {
    const original = (Base.prototype as Record<string, (...args: unknown[]) => unknown>)[name];
    Object.defineProperty(Metered.prototype, name, {
      value: function (this: object, ...args: unknown[]) {
        if (!metering) return original.apply(this, args);
        return asInvocation(`${Base.name}.${name}`, () => original.apply(this, args), this);
      },
      writable: true,
      configurable: true,
    });
  }
  Object.defineProperty(Metered, "name", { value: Base.name });
  return Metered as unknown as C;
}
