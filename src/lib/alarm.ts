/**
 * A Durable Object has one alarm, and the ledger's serves several upkeeps (the
 * log, archiving, retention, a shard move, rollups): each asks for a time, and
 * the earliest asked for wins, so none pushes another's work later.
 */
export async function alarmNoLaterThan(storage: DurableObjectStorage, at: number): Promise<void> {
  const current = await storage.getAlarm();
  if (current === null || current > at) await storage.setAlarm(at);
}
