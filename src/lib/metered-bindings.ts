import { charge, type Invocation } from "./meter";

/** Proxies that count each binding call against the invocation under way (src/lib/meter.ts). */

/**
 * Calls `method` on `target` once the current invocation took `count` of its
 * budget. Past a limit the call is not made: async methods reject, as the
 * platform's own refusal would.
 */
function counted(target: object, method: Function, args: unknown[], count: (i: Invocation) => void): unknown {
  try {
    charge(count);
  } catch (error) {
    return Promise.reject(error);
  }
  return Reflect.apply(method, target, args);
}

const D1_RUNS = new Set(["first", "all", "run", "raw"]);
const R2_CALLS = new Set(["get", "put", "head", "list", "delete", "createMultipartUpload", "resumeMultipartUpload"]);

const RAW = Symbol("metered.raw");
function unwrap(statement: D1PreparedStatement): D1PreparedStatement {
  return (statement as unknown as Record<symbol, D1PreparedStatement>)[RAW] ?? statement;
}

function meteredStatement(statement: D1PreparedStatement): D1PreparedStatement {
  return new Proxy(statement, {
    get(target, key) {
      if (key === RAW) return target;
      const value = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      if (key === "bind") return (...args: unknown[]) => meteredStatement(Reflect.apply(value, target, args));
      if (D1_RUNS.has(key as string)) return (...args: unknown[]) => counted(target, value, args, (i) => i.d1());
      return value.bind(target);
    },
  });
}

function meteredD1(db: D1Database): D1Database {
  return new Proxy(db, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      if (key === "prepare") return (sql: string) => meteredStatement(Reflect.apply(value, target, [sql]));
      if (key === "batch") {
        // The statements were wrapped by prepare(); D1 needs its own objects back.
        return (statements: D1PreparedStatement[]) => counted(target, value, [statements.map(unwrap)], (i) => i.d1(statements.length));
      }
      if (key === "exec") return (sql: string) => counted(target, value, [sql], (i) => i.d1(sql.split(";").filter((s) => s.trim()).length));
      return value.bind(target);
    },
  });
}

function meteredBucket(bucket: R2Bucket): R2Bucket {
  return new Proxy(bucket, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      if (R2_CALLS.has(key as string)) return (...args: unknown[]) => counted(target, value, args, (i) => i.subrequest());
      return value.bind(target);
    },
  });
}

function meteredStub<T extends object>(stub: T): T {
  return new Proxy(stub, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== "function" || key === "then") return value;
      return (...args: unknown[]) => counted(target, value, args, (i) => i.subrequest());
    },
  });
}

function meteredNamespace(ns: DurableObjectNamespace): DurableObjectNamespace {
  return new Proxy(ns, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      if (key === "get" || key === "getByName") return (...args: unknown[]) => meteredStub(Reflect.apply(value, target, args) as object);
      return value.bind(target);
    },
  });
}

const isD1 = (v: unknown): v is D1Database => typeof v === "object" && v !== null && "prepare" in v && "batch" in v;
const isR2 = (v: unknown): v is R2Bucket => typeof v === "object" && v !== null && "createMultipartUpload" in v;
const isNamespace = (v: unknown): v is DurableObjectNamespace => typeof v === "object" && v !== null && "idFromName" in v;

/** The env with every D1, R2 and Durable Object binding counted against the current invocation. */
export function meterEnv<E extends object>(env: E): E {
  const wrapped = new Map<PropertyKey, { of: unknown; metered: unknown }>();
  return new Proxy(env, {
    get(target, key) {
      const value = Reflect.get(target, key);
      // Plain values are read through every time: a test may change a var (SIGNING_KEYS) on the live env.
      if (!isD1(value) && !isR2(value) && !isNamespace(value)) return value;
      const seen = wrapped.get(key);
      if (seen && seen.of === value) return seen.metered;
      const metered = isD1(value) ? meteredD1(value) : isR2(value) ? meteredBucket(value) : meteredNamespace(value);
      wrapped.set(key, { of: value, metered });
      return metered;
    },
  });
}

/** Outgoing fetch() counts as a subrequest of whatever invocation makes it. */
export function meterFetch(): void {
  const original = globalThis.fetch;
  if ((original as { metered?: boolean }).metered) return;
  const metered = Object.assign((...args: Parameters<typeof fetch>) => counted(globalThis, original, args, (i) => i.subrequest()), { metered: true });
  globalThis.fetch = metered as typeof fetch;
}
