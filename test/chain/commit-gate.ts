/** Test helpers: a project's ledger that fell behind (its commits held), and what waits in its commit queue. */
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
