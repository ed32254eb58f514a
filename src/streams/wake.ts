/**
 * The ledger's only tie to streams: after a commit it wakes the project's
 * streams, never waiting for them (it runs this under ctx.waitUntil). Which
 * streams a project has is cached for a few seconds per isolate, so a busy
 * ledger costs D1 one small read per project every WAKE_CACHE_MS; a stream
 * created meanwhile polls on its own until the cache has caught up.
 */
import { TtlCache } from "../lib/ttl-cache";
import { deliveryStub } from "./store";

export const WAKE_CACHE_MS = 5000;
const streamsOf = new TtlCache<string[]>(WAKE_CACHE_MS);

export async function wakeStreams(env: Env, projectId: string): Promise<void> {
  let ids = streamsOf.get(projectId);
  if (!ids) {
    const { results } = await env.DB.prepare("SELECT id FROM streams WHERE project_id = ? AND status != 'disabled'").bind(projectId).all<{ id: string }>();
    ids = results.map((r) => r.id);
    streamsOf.set(projectId, ids);
  }
  await Promise.all(ids.map((id) => deliveryStub(env, id).wake().catch(() => {})));
}

/** Forgets this isolate's list for a project (after a stream is created or deleted here). */
export function forgetStreams(projectId: string): void {
  streamsOf.delete(projectId);
}
