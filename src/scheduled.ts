import { IDEMPOTENCY_WINDOW_MS } from "./chain/idempotency";
import { deleteExpiredExports } from "./reads/export-stream";
import { purgeExpiredEvents } from "./chain/retention";
import { shardDb, shardNumbers } from "./storage/shards";

/** The daily cron: housekeeping that must not run on the request path. */
export async function scheduled(_controller: ScheduledController, env: Env, _ctx: ExecutionContext): Promise<void> {
  const cutoff = new Date(Date.now() - IDEMPOTENCY_WINDOW_MS).toISOString();
  for (const shard of shardNumbers(env)) {
    await shardDb(env, shard).prepare("DELETE FROM idempotency_keys WHERE created_at < ?").bind(cutoff).run();
  }
  await purgeExpiredEvents(env, new Date());
  await deleteExpiredExports(env, new Date());
}
