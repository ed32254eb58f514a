/**
 * Test helpers: a project's ledger that fell behind (its commits held), what
 * waits in its commit queue, what its shard stores, and a worker that cannot
 * look for a lost answer.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import type { ProjectLedger } from "../../src/durable/project-ledger.do";

const ledger = (projectId: string) => env.LEDGER.get(env.LEDGER.idFromName(projectId));

/** Holds every commit of the project's ledger until the returned release is called, as a slow database would. */
export async function holdCommits(projectId: string): Promise<() => void> {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  await runInDurableObject(ledger(projectId), async (instance: ProjectLedger) => {
    const self = instance as unknown as { loadHead(): Promise<void>; db: D1Database };
    await self.loadHead();
    const db = self.db;
    self.db = new Proxy(db, {
      get(target, key) {
        if (key === "batch") return async (statements: D1PreparedStatement[]) => (await gate, target.batch(statements));
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  });
  return release;
}

/** Events queued or committing in the project's ledger. */
export function queuedEvents(projectId: string): Promise<number> {
  return runInDurableObject(ledger(projectId), (instance: ProjectLedger) => (instance as unknown as { commits: { load(): { events: number } } }).commits.load().events);
}

/** The project's stored events as [seq, action], in chain order. */
export async function storedActions(p: { id: string; db: D1Database }): Promise<Array<[number, string]>> {
  const { results } = await p.db.prepare("SELECT seq, action FROM events WHERE project_id = ? ORDER BY seq").bind(p.id).all<{ seq: number; action: string }>();
  return results.map((r) => [r.seq, r.action]);
}

/** Runs `work` while the shard refuses every append's give-up, as when a worker's look cannot reach the database. */
export async function whileLooksRefused<T>(db: D1Database, work: () => Promise<T>): Promise<T> {
  await db.prepare("CREATE TRIGGER test_look_refused BEFORE INSERT ON given_up_appends BEGIN SELECT RAISE(ABORT, 'test: the database is unreachable'); END").run();
  try {
    return await work();
  } finally {
    await db.prepare("DROP TRIGGER test_look_refused").run();
  }
}
