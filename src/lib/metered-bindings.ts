import { charge, countRows, type Invocation } from "./meter";

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

/** Counts the rows D1 says a statement read and wrote. */
function billed<R extends D1Result>(result: R): R {
  countRows("d1", result?.meta?.rows_read ?? 0, result?.meta?.rows_written ?? 0);
  return result;
}

function meteredStatement(statement: D1PreparedStatement): D1PreparedStatement {
  return new Proxy(statement, {
    get(target, key) {
      if (key === RAW) return target;
      const value = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      if (key === "bind") return (...args: unknown[]) => meteredStatement(Reflect.apply(value, target, args));
      // run() and all() answer the rows they read and wrote in meta; first() and raw() answer rows only, so their reads go uncounted.
      if (key === "run" || key === "all") return (...args: unknown[]) => (counted(target, value, args, (i) => i.d1()) as Promise<D1Result>).then(billed);
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
        return (statements: D1PreparedStatement[]) =>
          (counted(target, value, [statements.map(unwrap)], (i) => i.d1(statements.length)) as Promise<D1Result[]>).then((results) => (results.forEach(billed), results));
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

/** A service or RPC binding (locally, the send_email binding): its stub answers `in` with true for every name, so it is told apart first. */
const isFetcher = (v: unknown): v is Fetcher => typeof v === "object" && v !== null && Object.prototype.toString.call(v) === "[object Fetcher]";
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
      if (!isFetcher(value) && !isD1(value) && !isR2(value) && !isNamespace(value)) return value;
      const seen = wrapped.get(key);
      if (seen && seen.of === value) return seen.metered;
      const metered = isFetcher(value) ? meteredStub(value) : isD1(value) ? meteredD1(value) : isR2(value) ? meteredBucket(value) : meteredNamespace(value);
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

/**
 * Meters a Durable Object's SQLite in place: each cursor's rowsRead and
 * rowsWritten (counted as they grow: at exec, after each read of the cursor,
 * and once the current task ends), and a row per key its KV API reads or
 * writes. In place, because the platform's base class takes only its own
 * state object, not a stand-in.
 */
export function meterState(ctx: DurableObjectState): void {
  const storage = ctx.storage;
  Object.defineProperty(storage, "sql", { value: meteredSql(storage.sql), configurable: true });
  if (storage.kv) Object.defineProperty(storage, "kv", { value: meteredKv(storage.kv), configurable: true });
}

function meteredSql(sql: SqlStorage): SqlStorage {
  return new Proxy(sql, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      if (key !== "exec") return value.bind(target);
      return (...args: unknown[]) => meteredCursor(Reflect.apply(value, target, args) as SqlStorageCursor<Record<string, SqlStorageValue>>);
    },
  });
}

function meteredCursor<T extends Record<string, SqlStorageValue>>(cursor: SqlStorageCursor<T>): SqlStorageCursor<T> {
  let read = 0;
  let written = 0;
  const flush = () => {
    const r = cursor.rowsRead;
    const w = cursor.rowsWritten;
    countRows("do", r - read, w - written);
    read = r;
    written = w;
  };
  flush();
  queueMicrotask(flush);
  const proxy: SqlStorageCursor<T> = new Proxy(cursor, {
    get(target, key) {
      if (key === Symbol.iterator) return () => proxy;
      const value = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const out = Reflect.apply(value, target, args);
        flush();
        return out;
      };
    },
  });
  return proxy;
}

function meteredKv(kv: SyncKvStorage): SyncKvStorage {
  return new Proxy(kv, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      if (key === "get") return (...args: unknown[]) => (countRows("do", 1, 0), Reflect.apply(value, target, args));
      if (key === "put" || key === "delete") return (...args: unknown[]) => (countRows("do", 0, 1), Reflect.apply(value, target, args));
      return value.bind(target);
    },
  });
}
