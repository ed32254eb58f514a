/**
 * src/log/: each project's transparency log, kept by its ledger on Durable
 * Object storage (log-store.ts) in the formats of src/tlog/. Start here:
 * ProjectLog (this file) appends the leaves a commit prepared, signs
 * checkpoints and answers proofs; log-backfill.ts builds the log of a project
 * older than it; published-tiles.ts and log-directory.ts serve it publicly;
 * witness-client.ts collects cosignatures.
 */
/**
 * A project's transparency log, owned by its ledger (the Durable Object that
 * alone writes the chain). Leaf i is the event with seq i + 1; its data is the
 * 32 bytes of the event's hash. Each group commit extends the tree in two
 * halves: prepare() hashes the new leaves before the D1 write (async, O(log n)
 * per event), apply() stores them right after D1 said yes, synchronously, in
 * the same storage transaction as the head, so head and tree never disagree.
 *
 * Only the "published" tree is ever served: all of it once the log is ready,
 * the empty tree while a backfill builds it (log-backfill.ts) or when it is
 * blocked. Checkpoints are signed on demand for the published size; the same
 * size always yields the same bytes (Ed25519 is deterministic), so nothing
 * needs signing on the ingest path.
 */
import type { Head } from "../chain/chain-check";
import { type Checkpoint, signCheckpoint } from "../tlog/checkpoint.ts";
import { HASH_SIZE, base64Encode, bytesEqual, hexDecode } from "../tlog/encoding.ts";
import type { LeafRun } from "../tlog/leaf-check.ts";
import { TreeFrontier, emptyRoot, leafHash } from "../tlog/merkle.ts";
import { consistencyProof, inclusionProof, rangeHash, treeRoot } from "../tlog/proofs.ts";
import { isLeafSet, multiproofRanges } from "../tlog/multiproof.ts";
import { type TileEntry, appendLeaves, nodeReader, readTile } from "../tlog/tile-builder.ts";
import { formatTlogProof } from "../tlog/tlog-proof.ts";
import { TILE_WIDTH, tilePath } from "../tlog/tiles.ts";
import { type BuildState, LogStore, TileRefusedError } from "./log-store.ts";
import { tileObjectKey } from "./log-directory.ts";
import { loadLogId, logOrigin, logSigner } from "./log-identity.ts";
import { cosignaturesFor } from "./witness-client.ts";
import { copiesMatch, fullTileDigest } from "./published-tiles.ts";
import type { ChainRow } from "../model/chain-row";

export interface PreparedAppend {
  from: number;
  frontier: TreeFrontier;
  entries: TileEntry[];
  lastHash: string;
}

export class ProjectLog {
  readonly store: LogStore;
  /** Leaves in the tree: known at start from the tiles, moved on by apply(). */
  private treeSize: number;
  /** The frontier at treeSize, once rebuilt (current()) or left by apply(). */
  private tree: TreeFrontier | null = null;
  private rebuilding: Promise<TreeFrontier> | null = null;
  private state: BuildState;
  private logIdValue: string | null = null;
  /** The last checkpoint signed, by size and key: Ed25519 is deterministic, so it stays valid. */
  private signed: { size: number; signer: string; note: string; checkpoint: Checkpoint } | null = null;

  constructor(
    storage: DurableObjectStorage,
    private readonly env: Env,
    readonly projectId: string,
  ) {
    // Old full tiles live in the LOGS bucket under their public keys (tile-offload.ts); the store checks what comes back.
    this.store = new LogStore(storage, async (level, index) => {
      const object = await this.env.LOGS.get(tileObjectKey(await this.logId(), tilePath(level, index)));
      return object ? new Uint8Array(await object.arrayBuffer()) : null;
    });
    this.treeSize = this.store.treeSize();
    this.state = this.store.build() ?? { status: "ready", lastHash: null };
  }

  /**
   * First sight of a ledger: one whose chain is empty starts ready; one that
   * already holds events starts building. `head` is the head the ledger had
   * stored: rows it adopts past it come through prepare/apply like a commit.
   */
  init(head: Head): void {
    // Every start since logs exist wrote the build state (with the frontier, which older code kept current).
    if (this.store.build() !== null) return;
    this.state = { status: head.seq === 0 ? "ready" : "building", lastHash: null };
    this.store.append([], TreeFrontier.empty(), this.state);
  }

  get size(): number {
    return this.treeSize;
  }

  /**
   * The frontier at the tree's size: after a start, the one saved when the
   * last leaf tile was completed with the leaves since appended (log-store.ts),
   * once; then kept by apply().
   */
  private current(): Promise<TreeFrontier> {
    if (this.tree) return Promise.resolve(this.tree);
    this.rebuilding ??= this.rebuild(this.treeSize)
      .then((built) => {
        // An apply() meanwhile left a newer frontier: keep it.
        if (this.tree === null && built.size === this.treeSize) this.tree = built;
        return this.tree ?? built;
      })
      .finally(() => {
        this.rebuilding = null;
      });
    return this.rebuilding;
  }

  private async rebuild(size: number): Promise<TreeFrontier> {
    const frontier = this.store.savedFrontier() ?? TreeFrontier.empty();
    const leaves = await this.store.readEntries(0, frontier.size, size - frontier.size);
    if (frontier.size > size || leaves.length !== size - frontier.size) {
      throw new Error(`log of project ${this.projectId}: the saved frontier (${frontier.size}) and the leaf tiles (${size}) do not meet`);
    }
    await frontier.appendMany(leaves);
    return frontier;
  }

  get status(): BuildState["status"] {
    return this.state.status;
  }

  get build(): BuildState {
    return this.state;
  }

  /** Leaves the public can see: all of them when ready, none before. */
  get publishedSize(): number {
    return this.state.status === "ready" ? this.treeSize : 0;
  }

  /**
   * Hashes the leaves of rows about to be committed, on a copy of the tree.
   * null when the log cannot take them now: while building, the backfill
   * reads these rows from D1 later, as it does for older ones.
   */
  async prepare(rows: ReadonlyArray<Pick<ChainRow, "seq" | "hash">>): Promise<PreparedAppend | null> {
    return this.extend(rows, this.state.status === "ready");
  }

  /** Also used by the backfill, which extends a tree that is not ready yet. */
  async extend(rows: ReadonlyArray<Pick<ChainRow, "seq" | "hash">>, allowed = true): Promise<PreparedAppend | null> {
    if (!allowed || rows.length === 0 || rows[0].seq !== this.treeSize + 1) return null;
    const frontier = (await this.current()).clone();
    const leaves = await Promise.all(rows.map((r) => leafHash(hexDecode(r.hash))));
    const entries = await appendLeaves(frontier, leaves);
    return { from: frontier.size - leaves.length, frontier, entries, lastHash: rows[rows.length - 1].hash };
  }

  /** Stores a prepared append. Synchronous: run it in the transaction that records the head. */
  apply(p: PreparedAppend | null, next: Partial<BuildState> = {}): void {
    if (p === null) return;
    // The commit lock serializes prepare and apply; a mismatch means a bug, and must not corrupt the tree.
    if (p.from !== this.treeSize) throw new Error(`log append prepared at ${p.from}, tree is at ${this.treeSize}`);
    const wasPublished = this.state.status === "ready";
    const state: BuildState = { ...this.state, lastHash: p.lastHash, ...next };
    // lastHash only matters to a backfill: a log that stays ready skips that write on every commit.
    const changed = !wasPublished || state.status !== "ready";
    this.store.append(p.entries, p.frontier, changed ? state : null, p.lastHash);
    this.tree = p.frontier;
    this.treeSize = p.frontier.size;
    this.state = state;
  }

  /**
   * Whether the tree's newest leaf row holds the chain's head (log-store.ts):
   * the log is ready and its last apply() stored exactly the leaves up to it
   * (apply() leaves the last leaf's data in the state's lastHash). Then the
   * ledger writes no head row of its own for the commit.
   */
  holds(head: Head): boolean {
    return this.state.status === "ready" && this.treeSize === head.seq && this.state.lastHash === head.hash;
  }

  /**
   * The chain's head as the tree keeps it (its size, its last leaf's data),
   * or null when the log is not ready or its newest leaf row was written by
   * older code (which kept the head apart, as the ledger still does when its
   * log does not take a commit's leaves).
   */
  keptHead(): Head | null {
    if (this.state.status !== "ready" || this.treeSize === 0) return null;
    const hash = this.store.lastLeaf();
    return hash === null ? null : { seq: this.treeSize, hash };
  }

  /** Records a build state change alone (the backfill blocking or finishing). */
  setState(next: Partial<BuildState>): void {
    this.state = { ...this.state, ...next };
    this.store.setBuild(this.state);
  }

  async logId(): Promise<string> {
    this.logIdValue ??= this.store.kv.get<string>("log:id") ?? null;
    if (this.logIdValue === null) {
      this.logIdValue = await loadLogId(this.env, this.projectId);
      this.store.kv.put("log:id", this.logIdValue);
    }
    return this.logIdValue;
  }

  async origin(): Promise<string> {
    return logOrigin(this.env, await this.logId());
  }

  private getNode(size: number) {
    return nodeReader(this.store.reader, size);
  }

  /** Root of the published tree at `size` (the frontier's when current, else from stored entries). */
  async root(size = this.publishedSize): Promise<Uint8Array> {
    if (size === 0) return emptyRoot();
    const tree = size === this.treeSize ? await this.current() : null;
    return tree?.size === size ? tree.root() : treeRoot(size, this.getNode(size));
  }

  /** The signed checkpoint of the published tree at `size`, with the cosignatures witnesses gave for it. */
  async checkpoint(size = this.publishedSize): Promise<{ note: string; text: string; checkpoint: Checkpoint } | null> {
    const origin = await this.origin();
    const signer = await logSigner(this.env, origin);
    if (!signer) return null;
    const signerId = `${signer.name}+${signer.keyId}`;
    if (this.signed?.size !== size || this.signed.signer !== signerId) {
      const checkpoint = { origin, size, rootHash: await this.root(size) };
      this.signed = { size, signer: signerId, note: await signCheckpoint(checkpoint, signer), checkpoint };
    }
    const { note, checkpoint } = this.signed;
    // note: the log's own signature only (what witnesses are sent); text: with their cosignatures.
    return { note, text: note + cosignaturesFor(this.store.kv, size, base64Encode(checkpoint.rootHash)), checkpoint };
  }

  /** For the public address `logId`: the newest checkpoint (null without a signing key); mine false when the address is another log's. */
  async publicCheckpoint(logId: string): Promise<{ mine: boolean; note: string | null }> {
    if (!(await this.isAt(logId))) return { mine: false, note: null };
    return { mine: true, note: (await this.checkpoint())?.text ?? null };
  }

  /** For the public address `logId`: tile bytes (null when the tree has no such tile); mine false when the address is another log's. */
  async publicTile(logId: string, level: number, index: number, width: number): Promise<{ mine: boolean; bytes: Uint8Array | null }> {
    if (!(await this.isAt(logId))) return { mine: false, bytes: null };
    return { mine: true, bytes: await this.tile(level, index, width) };
  }

  /** What an evidence export pins: the published tree's size and its signed checkpoint; null without a signing key. */
  async evidenceAnchor(): Promise<{ size: number; checkpoint: string; origin: string } | null> {
    const cp = await this.checkpoint();
    return cp ? { size: cp.checkpoint.size, checkpoint: cp.text, origin: cp.checkpoint.origin } : null;
  }

  /** tlog-proof text for the event with `seq`, against the newest checkpoint; null when not published. */
  async inclusion(seq: number): Promise<{ index: number; tree_size: number; proof: string } | null> {
    const size = this.publishedSize;
    const index = seq - 1;
    if (!Number.isSafeInteger(index) || index < 0 || index >= size) return null;
    const [hashes, cp] = await Promise.all([inclusionProof(index, size, this.getNode(size)), this.checkpoint(size)]);
    if (!cp) return null;
    return { index, tree_size: size, proof: formatTlogProof({ index, proof: hashes, checkpoint: cp.text }) };
  }

  /**
   * Hashes (32 bytes each, concatenated) proving leaves `indexes` in the
   * published tree of `size` (src/tlog/multiproof.ts); null when a size or an
   * index is out of range. For evidence exports, one part's rows at a time.
   */
  async multiproof(size: number, indexes: number[]): Promise<Uint8Array | null> {
    if (!Number.isSafeInteger(size) || size < 1 || size > this.publishedSize || !isLeafSet(indexes, size)) return null;
    const ranges = multiproofRanges(indexes, size);
    const out = new Uint8Array(ranges.length * HASH_SIZE);
    const getNode = this.getNode(size);
    for (const [i, r] of ranges.entries()) out.set(await rangeHash(r.begin, r.end, getNode), i * HASH_SIZE);
    return out;
  }

  /** RFC 6962 consistency proof between published sizes; null when a size is out of range. */
  async consistency(from: number, to = this.publishedSize): Promise<{ from: number; to: number; proof: string[] } | null> {
    if (!(Number.isSafeInteger(from) && Number.isSafeInteger(to) && from >= 0 && from <= to && to <= this.publishedSize)) return null;
    const proof = await consistencyProof(from, to, this.getNode(to));
    return { from, to, proof: proof.map(base64Encode) };
  }

  /** A tile of the published tree, or null when it has no such tile (or not that wide). */
  tile(level: number, index: number, width: number): Promise<Uint8Array | null> {
    return readTile(this.store.reader, { level, index, width }, this.publishedSize);
  }

  /**
   * Whether a public address names this log. The control database maps log
   * ids to projects, and whoever writes it can point one project's address at
   * another's ledger: the ledger's own id (kept in its storage) has the last word.
   */
  async isAt(logId: string): Promise<boolean> {
    return (await this.logId()) === logId;
  }

  /**
   * Leaf hashes of the given indexes, for a verify page whose rows may be
   * scattered (a window): 32 bytes per index in the order asked, read per run
   * of consecutive indexes; zeros for an index past the published tree. Raw
   * bytes, not hex: verify compares a million of them with its own digests.
   * A moved tile R2 gives back altered or not at all leaves zeros too, which
   * no row's leaf digest equals: verify fails on it (and the anchor's check
   * of the bucket already failed), never trusting the object's bytes.
   */
  async leavesAt(indexes: readonly number[]): Promise<LeafRun> {
    const treeSize = this.publishedSize;
    const leaves = new Uint8Array(indexes.length * HASH_SIZE);
    const inTree = (i: number) => Number.isInteger(indexes[i]) && indexes[i] >= 0 && indexes[i] < treeSize;
    for (let i = 0; i < indexes.length; ) {
      if (!inTree(i)) {
        i++;
        continue;
      }
      let j = i + 1;
      while (j < indexes.length && j - i < 4096 && inTree(j) && indexes[j] === indexes[j - 1] + 1) j++;
      await this.readLeaves(indexes[i], j - i, (hash, k) => leaves.set(hash, (i + k) * HASH_SIZE));
      i = j;
    }
    return { treeSize, leaves };
  }

  /** Level-0 entries [start, start + count) to `put`; after a refused tile, tile by tile, so only the refused ones are left out. */
  private async readLeaves(start: number, count: number, put: (hash: Uint8Array, offset: number) => void): Promise<void> {
    try {
      (await this.store.readEntries(0, start, count)).forEach(put);
      return;
    } catch (error) {
      if (!(error instanceof TileRefusedError)) throw error;
    }
    for (let at = start; at < start + count; ) {
      const next = Math.min(start + count, (Math.floor(at / TILE_WIDTH) + 1) * TILE_WIDTH);
      try {
        (await this.store.readEntries(0, at, next - at)).forEach((hash, k) => put(hash, at - start + k));
      } catch (error) {
        if (!(error instanceof TileRefusedError)) throw error;
        console.error(`log of project ${this.projectId}: ${error.message}`);
      }
      at = next;
    }
  }

  /**
   * What verify anchors the tree on: the published size and the root the
   * checkpoint signs, recomputed from the stored tiles, so a stored entry that
   * drifted from the frontier (made from the leaves as they were appended:
   * current()) shows; and the public copies of full tiles in
   * R2, which is what the public fetches: one that is not the ledger's tile
   * (or is for a tile the tree does not have) fails the same way. Listing the
   * copies costs an R2 list per 1,000 full tiles: verify asks for it
   * (`copies`), a receipt's check does not. Tiles moved to R2 are among
   * them, and each must be there: one missing or altered fails too.
   */
  async anchor(copies = true): Promise<{ tree_size: number; root_hash: string; tiles_match_root: boolean }> {
    const size = this.publishedSize;
    const root = await this.root(size);
    const fromTiles = size === 0 ? root : await treeRoot(size, this.getNode(size)).catch(refusedAs(null));
    const match =
      fromTiles !== null &&
      bytesEqual(fromTiles, root) &&
      (!copies || (await copiesMatch(this.env.LOGS, await this.logId(), (t) => fullTileDigest(this, t), this.store.movedCounts())));
    return { tree_size: size, root_hash: base64Encode(root), tiles_match_root: match };
  }
}

/** For a catch: a moved tile refused (logged) becomes `value`; any other error stays one. */
function refusedAs<T>(value: T): (error: unknown) => T {
  return (error) => {
    if (!(error instanceof TileRefusedError)) throw error;
    console.error(error.message);
    return value;
  };
}
