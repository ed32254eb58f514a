import { afterEach, describe, expect, it, vi } from "vitest";
import { findKey, UNKNOWN_KEY_CACHE_SECONDS, type KeyRow } from "../../src/auth/api-keys";

/** An Env whose control database answers from `rows` and counts the queries it gets. */
function fakeEnv(rows: Map<string, KeyRow>) {
  const queries: string[] = [];
  const DB = {
    prepare: () => ({
      bind: (prefix: string) => ({
        first: async () => {
          queries.push(prefix);
          return rows.get(prefix) ?? null;
        },
      }),
    }),
  };
  return { env: { DB } as unknown as Env, queries };
}

const unique = () => crypto.randomUUID().replace(/-/g, "").slice(0, 16);

describe("findKey", () => {
  afterEach(() => vi.useRealTimers());

  it("asks D1 once for an unknown prefix however often it is presented, until the short period ends", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const { env, queries } = fakeEnv(new Map());
    const prefix = unique();
    for (let i = 0; i < 50; i++) expect(await findKey(env, prefix)).toBeNull();
    expect(queries).toEqual([prefix]);
    vi.advanceTimersByTime(UNKNOWN_KEY_CACHE_SECONDS * 1000);
    expect(await findKey(env, prefix)).toBeNull();
    expect(queries).toEqual([prefix, prefix]);
  });

  it("keeps the prefixes apart: each unknown one costs one query, a known one is found", async () => {
    const row: KeyRow = { project_id: `p-${unique()}`, secret_hash: "h", revoked_at: null, scopes: "admin", expires_at: null, shard: 0 };
    const known = unique();
    const { env, queries } = fakeEnv(new Map([[known, row]]));
    const random = Array.from({ length: 20 }, unique);
    for (const prefix of [...random, ...random]) await findKey(env, prefix);
    expect(queries).toEqual(random);
    expect(await findKey(env, known)).toEqual(row);
    expect(await findKey(env, known)).toEqual(row);
    expect(queries.filter((p) => p === known)).toHaveLength(1);
  });
});
