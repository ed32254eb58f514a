/**
 * The ledger's only tie to streams: after a commit it wakes the project's
 * streams, never waiting for them (it runs this under ctx.waitUntil). Which
 * streams a project has is cached for a few seconds per isolate, so a busy
 * ledger costs D1 one small read per project every WAKE_CACHE_MS; a stream
 * created meanwhile polls on its own until the cache has caught up.
 *
 * Wakes are coalesced: under a stream of small commits the ledger sends them
 * at most every wakeCoalesceMs (transport.ts), and commits meanwhile join the
 * next one. With three streams whose destination hung, a wake per commit left
 * single-event ingest at 81% of a project without streams (one run of npm run
 * bench streams), on RPCs the streams did not need: one wake after the last of
 * those commits delivers them all. Coalesced: 96% in the next run.
 */
import { TtlCache } from "../lib/ttl-cache";
import { deliveryStub } from "./store";
import { streamPolicy } from "./transport";

export const WAKE_CACHE_MS = 5000;
const streamsOf = new TtlCache<string[]>(WAKE_CACHE_MS);
/** Per project: the wake not sent yet, which a new commit joins, and when the last one went. */
const queued = new Map<string, Promise<void>>();
const lastWake = new Map<string, number>();

export function wakeStreams(env: Env, projectId: string): Promise<void> {
  const waiting = queued.get(projectId);
  if (waiting) return waiting;
  const delay = (lastWake.get(projectId) ?? 0) + streamPolicy.wakeCoalesceMs - Date.now();
  const wake = (delay > 0 ? new Promise((r) => setTimeout(r, delay)) : Promise.resolve()).then(() => {
    // From here on a commit queues a wake of its own: this one may already have read the stream list.
    queued.delete(projectId);
    // Only recent times matter; the map stays as small as the projects this isolate commits for.
    if (lastWake.size > 10_000) lastWake.clear();
    lastWake.set(projectId, Date.now());
    return sendWakes(env, projectId);
  });
  queued.set(projectId, wake);
  return wake;
}

async function sendWakes(env: Env, projectId: string): Promise<void> {
  let ids = streamsOf.get(projectId);
  if (!ids) {
    const { results } = await env.DB.prepare("SELECT id FROM streams WHERE project_id = ? AND status NOT IN ('disabled', 'paused')").bind(projectId).all<{ id: string }>();
    ids = results.map((r) => r.id);
    streamsOf.set(projectId, ids);
  }
  await Promise.all(ids.map((id) => deliveryStub(env, id).wake().catch(() => {})));
}

/** Forgets this isolate's list for a project (after a stream is created or deleted here). */
export function forgetStreams(projectId: string): void {
  streamsOf.delete(projectId);
}
