import { checkRow, type Head } from "./chain-check";
import type { SigningKeyring } from "../sealing/signing-keys";
import { CHAIN_COLUMNS, chainRowOf, type ChainRow } from "../model/chain-row";
import { idMillis } from "../model/event-id";
import { rowsBySeq } from "../model/row-keys";
import { mergeBySeq, overArms } from "../model/periods";

/**
 * Rows past the ledger's stored head are adopted only when they are exactly
 * what the ledger itself would have written: the one legitimate way for them
 * to exist is a group commit that landed in D1 while the ledger died before
 * recording its new head. So they must continue the stored head seq by seq,
 * link hash by hash, carry their personal data and our signature, and be no
 * more than one group commit. Anything else was planted and is left for
 * verify to report; the ledger keeps its own head.
 *
 * Also: the millisecond the head's commit was received at (`lastReceivedMs`),
 * read from its event id, which its hash covers, once that row is seen to be
 * the one the head names; null when it cannot be trusted. The group commit
 * goes on after it (GroupCommit.resumeAfter), so receive times never step back
 * across a restart on a machine whose clock is behind the last one's.
 */
export async function recoverHead(
  db: D1Database,
  ring: SigningKeyring,
  projectId: string,
  stored: Head,
  maxGroup: number,
): Promise<{ head: Head; adopted: ChainRow[]; refused: string | null; lastReceivedMs: number | null; inD1: boolean }> {
  // The head's own row first (when there is one), then what lies past it, in whichever arms hold them (model/periods.ts).
  const sql = `SELECT ${CHAIN_COLUMNS} FROM ${rowsBySeq({ project: "?1", lo: "?2", hi: null, limit: "?3" })}`;
  const read = async (arm: D1Database) => (await arm.prepare(sql).bind(projectId, Math.max(1, stored.seq), maxGroup + 2).raw()).map(chainRowOf);
  const all = mergeBySeq(await overArms(db, read), maxGroup + 2);
  const own = stored.seq > 0 && all[0]?.seq === stored.seq ? all[0] : null;
  const rows = own ? all.slice(1) : all;
  const ownMs = own !== null && own.hash === stored.hash && (await checkRow(ring, own)).hash ? idMillis(own.id) : null;
  // Not in D1: commits answered before D1 had them (chain/commit-backlog.ts), which the ledger's journal holds.
  const inD1 = stored.seq === 0 || own !== null;
  if (rows.length === 0) return { head: stored, adopted: [], refused: null, lastReceivedMs: ownMs, inD1 };
  const refuse = (why: string) => {
    console.warn(`ledger ${projectId}: kept head ${stored.seq}; rows past it refused: ${why}`);
    return { head: stored, adopted: [], refused: why, lastReceivedMs: ownMs, inD1 };
  };
  if (rows.length > maxGroup) return refuse(`more than one group commit (${maxGroup} rows) past the stored head`);
  let prev: Head = stored;
  for (const row of rows) {
    if (row.seq !== prev.seq + 1 || row.prev_hash !== prev.hash) return refuse(`seq ${row.seq} does not continue the chain`);
    if (row.anonymized_at !== null) return refuse(`seq ${row.seq} is already anonymized`);
    const check = await checkRow(ring, row);
    if (!check.hash || check.signature !== true) return refuse(`seq ${row.seq} fails its hash or signature`);
    prev = { seq: row.seq, hash: row.hash };
  }
  return { head: prev, adopted: rows, refused: null, lastReceivedMs: idMillis(rows[rows.length - 1].id), inD1 };
}
