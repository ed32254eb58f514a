/**
 * The customer's watchdog: fetches a log's newest checkpoint, checks it is
 * signed by the pinned key, and proves from the log's public tiles that it
 * extends the checkpoint seen last time. Dependency-free and fetch-injected,
 * so it runs in Node, browsers and Workers alike.
 *
 * Outcomes: "ok" (save tree_size and root_hash for next time), "fail" (the
 * log served something that does not check out: bad signature, shrinking or
 * forked tree, tiles that contradict the signed root) and "error" (could not
 * get an answer: network, HTTP status, unusable arguments). A fail is
 * evidence against the log; an error only means try again.
 */
import { verifyCheckpoint } from "./checkpoint.ts";
import { LogFormatError, base64DecodeHash, base64Encode, bytesEqual, isCount } from "./encoding.ts";
import { rootFromLeafHashes } from "./merkle.ts";
import { type NoteVerifier, parseVkey } from "./note.ts";
import { type GetNode, type LeafRange, consistencyProof, consistencyProofRanges, nodesForRanges, treeRoot, verifyConsistency } from "./proofs.ts";
import { type TileId, decodeTile, tilePath, tileSliceForNode } from "./tiles.ts";

export interface MonitorState {
  tree_size: number;
  /** Base64 root hash. */
  root_hash: string;
}

export interface FetchResponseLike {
  ok: boolean;
  status: number;
  arrayBuffer(): Promise<ArrayBuffer>;
}
export type FetchLike = (url: string) => Promise<FetchResponseLike>;

export interface MonitorOptions {
  /** The log's prefix, e.g. https://host/logs/<log_id>; checkpoint and tiles live under it. */
  publicUrl: string;
  /** The pinned verifier key; its name must be the checkpoint origin. */
  vkey: string;
  /** What the last "ok" run returned, or null on the first run (which trusts and saves). */
  saved: MonitorState | null;
  fetch?: FetchLike;
}

export type MonitorResult =
  | { status: "ok"; tree_size: number; root_hash: string; checkpoint: string; tiles_fetched: number }
  | { status: "fail"; reason: string }
  | { status: "error"; message: string };

/** Raised when a response could not be obtained; becomes status "error". */
class FetchFailure extends Error {}
/** Raised when a response was obtained but is invalid; becomes status "fail". */
class Integrity extends Error {}

async function get(fetcher: FetchLike, url: string): Promise<Uint8Array> {
  let res: FetchResponseLike;
  try {
    res = await fetcher(url);
  } catch (err) {
    throw new FetchFailure(`GET ${url}: ${(err as Error).message}`);
  }
  if (!res.ok) throw new FetchFailure(`GET ${url}: HTTP ${res.status}`);
  try {
    return new Uint8Array(await res.arrayBuffer());
  } catch (err) {
    throw new FetchFailure(`GET ${url}: ${(err as Error).message}`);
  }
}

/**
 * Fetches, in parallel, the tiles of a tree of `treeSize` that hold the
 * perfect nodes the given ranges decompose into, and returns a node source
 * over them. Each node comes from one tile (see tileSliceForNode), so a proof
 * touches about two tiles per tile level: O(log n) fetches.
 */
async function fetchNodes(fetcher: FetchLike, base: string, treeSize: number, ranges: LeafRange[]) {
  const tiles = new Map<string, TileId>();
  for (const node of nodesForRanges(ranges)) {
    const { tile } = tileSliceForNode(node.level, node.index, treeSize);
    tiles.set(tilePath(tile.level, tile.index, tile.width), tile);
  }
  const data = new Map<string, Uint8Array[]>();
  await Promise.all(
    [...tiles].map(async ([path, tile]) => {
      const body = await get(fetcher, `${base}/${path}`);
      try {
        data.set(path, decodeTile(body, tile.width));
      } catch (err) {
        throw new Integrity(`${path}: ${(err as Error).message}`);
      }
    }),
  );
  const getNode: GetNode = (level, index) => {
    const { tile, offset, count } = tileSliceForNode(level, index, treeSize);
    const hashes = data.get(tilePath(tile.level, tile.index, tile.width))!;
    return rootFromLeafHashes(hashes.slice(offset, offset + count));
  };
  return { getNode, fetched: tiles.size };
}

function parseSaved(saved: MonitorState): { size: number; root: Uint8Array } {
  if (!saved || !isCount(saved.tree_size) || typeof saved.root_hash !== "string") throw new LogFormatError("invalid saved state");
  return { size: saved.tree_size, root: base64DecodeHash(saved.root_hash) };
}

export async function monitorLog(opts: MonitorOptions): Promise<MonitorResult> {
  const fetcher: FetchLike = opts.fetch ?? ((url) => fetch(url));
  const base = opts.publicUrl.replace(/\/+$/, "");
  let verifier: NoteVerifier;
  let saved: { size: number; root: Uint8Array } | null;
  try {
    verifier = await parseVkey(opts.vkey);
    saved = opts.saved ? parseSaved(opts.saved) : null;
  } catch (err) {
    return { status: "error", message: (err as Error).message };
  }
  try {
    const note = await get(fetcher, `${base}/checkpoint`);
    const cp = await verifyCheckpoint(note, verifier);
    if (!cp.ok) return { status: "fail", reason: `checkpoint rejected: ${cp.reason}` };
    const { size, rootHash } = cp.checkpoint;
    let fetched = 0;
    if (saved && size < saved.size) {
      return { status: "fail", reason: `tree shrank from ${saved.size} to ${size}` };
    }
    if (saved && size === saved.size) {
      if (!bytesEqual(rootHash, saved.root)) return { status: "fail", reason: `two different roots for tree size ${size}` };
    } else if (saved && saved.size > 0) {
      const ranges = consistencyProofRanges(saved.size, size);
      const { getNode, fetched: n } = await fetchNodes(fetcher, base, size, ranges);
      fetched = n;
      const proof = await consistencyProof(saved.size, size, getNode);
      if (!(await verifyConsistency(saved.size, size, proof, saved.root, rootHash))) {
        return { status: "fail", reason: `tree of ${size} is not consistent with the saved tree of ${saved.size}` };
      }
    } else {
      // Nothing to extend yet; still check the tiles agree with the signed root.
      const ranges = size > 0 ? [{ begin: 0, end: size }] : [];
      const { getNode, fetched: n } = await fetchNodes(fetcher, base, size, ranges);
      fetched = n;
      if (!bytesEqual(await treeRoot(size, getNode), rootHash)) {
        return { status: "fail", reason: `the root of the tree of ${size} does not match its tiles` };
      }
    }
    const checkpoint = new TextDecoder().decode(note);
    return { status: "ok", tree_size: size, root_hash: base64Encode(rootHash), checkpoint, tiles_fetched: fetched };
  } catch (err) {
    if (err instanceof Integrity) return { status: "fail", reason: err.message };
    return { status: "error", message: (err as Error).message };
  }
}
