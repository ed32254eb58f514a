/**
 * Long polls on a ledger's head (GET /v1/events/feed?wait=): each waiter is
 * a promise the commit resolves, so a waiting collector costs no query until
 * something is committed. Past MAX_WAITERS a new waiter is answered at once
 * (it then polls like a client without `wait`), so a crowd of idle
 * collectors cannot hold unbounded memory in one ledger.
 */
const MAX_WAITERS = 1000;

interface Waiter {
  after: number;
  done: (seq: number) => void;
}

export class HeadWaiters {
  private readonly waiting = new Set<Waiter>();

  /** Resolves with the head's seq once it passes `after`, or after `ms` with the head as it is. */
  wait(after: number, head: () => number, ms: number): Promise<number> {
    if (head() > after || ms <= 0 || this.waiting.size >= MAX_WAITERS) return Promise.resolve(head());
    return new Promise((resolve) => {
      const waiter: Waiter = {
        after,
        done: (seq) => {
          clearTimeout(timer);
          this.waiting.delete(waiter);
          resolve(seq);
        },
      };
      const timer = setTimeout(() => waiter.done(head()), ms);
      this.waiting.add(waiter);
    });
  }

  /** After a commit: wakes every waiter the new head passed. */
  advanced(seq: number): void {
    for (const waiter of [...this.waiting]) if (seq > waiter.after) waiter.done(seq);
  }
}
