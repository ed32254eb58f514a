/**
 * src/durable/: the runtime. Durable Object and Workflow classes compose the
 * layers below and hold no logic of their own. Start here: ProjectLedger (this
 * file), the only writer of a project's chain and log; job-workflow.ts runs
 * jobs; stream-delivery.do.ts, verify-chunk.do.ts, export-part.do.ts and
 * rate-limiter.do.ts each host one service's state or work.
 */
import { retentionAlarm } from "../chain/retention-upkeep";
import { rollupBackfillAlarm } from "../reads/rollup-backfill";
import { logAlarm } from "../log/log-upkeep";
import { archiveAlarm } from "../storage/archive-upkeep";
import { moveAlarm } from "../storage/move-upkeep";
import { LedgerCatalogRpc } from "./ledger-catalog-rpc";

/**
 * The only writer of one project's chain, one Durable Object per project
 * (idFromName(projectId)). It holds no logic of its own: its state and wiring
 * are LedgerCore (ledger-core.ts), its RPC surface four facets by concern
 * (ledger-log-rpc.ts: the transparency log and verify's reads;
 * ledger-history-rpc.ts: retention, holds, archive, moves; ledger-chain-rpc.ts:
 * appends, erasures, verify's anchor; ledger-catalog-rpc.ts: the action
 * catalog), and the domain folders do the work.
 * Its alarm runs each concern's background work in turn.
 */
export class ProjectLedger extends LedgerCatalogRpc {
  /** Background work: the log's (building the tree of an older project, witness rounds), then continuous archiving. */
  async alarm() {
    // Commits' waiting activity counts (src/reads/rollups.ts): the alarm comes about a minute after commits.
    this.rollups.flush();
    await logAlarm(this.log, this.logDeps());
    await moveAlarm(this.ctx.storage, (shard) => this.moveShard(shard));
    await retentionAlarm(this.ctx.storage, (at, afterSeq) => this.purgeExpired(at, afterSeq));
    await archiveAlarm({ ...this.host, step: (now, mode) => this.archiveSegment(now, { mode }) });
    await rollupBackfillAlarm({ ...this.host, rollups: this.rollups });
  }
}
