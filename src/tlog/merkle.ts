/**
 * RFC 6962 / RFC 9162 Merkle tree hashing with SHA-256, plus the tree's
 * right border ("frontier"): the roots of its perfect subtrees, which is all
 * a log needs to keep to append leaves and compute the root.
 *
 * Node coordinates used throughout src/tlog: the node at `level` L and `index`
 * N is the perfect subtree over leaves [N * 2^L, (N + 1) * 2^L).
 */
import { HASH_SIZE, LogFormatError, base64Decode, base64Encode, isCount } from "./encoding.ts";

export interface TreeNode {
  level: number;
  index: number;
  hash: Uint8Array;
}

export async function sha256(data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", data));
}

/** SHA-256(0x00 || data): the prefix keeps leaves and inner nodes from colliding. */
export function leafHash(data: Uint8Array): Promise<Uint8Array> {
  const buf = new Uint8Array(data.length + 1);
  buf.set(data, 1);
  return sha256(buf);
}

/** SHA-256(0x01 || left || right). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Promise<Uint8Array> {
  const buf = new Uint8Array(1 + left.length + right.length);
  buf[0] = 1;
  buf.set(left, 1);
  buf.set(right, 1 + left.length);
  return sha256(buf);
}

/** The root of the empty tree, SHA-256 of no bytes. */
export function emptyRoot(): Promise<Uint8Array> {
  return sha256(new Uint8Array(0));
}

/** Largest power of two strictly below n (n >= 2); the RFC's split point k. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * MTH(D[0:n]) straight from the RFC 6962 definition. It rehashes everything,
 * so it is for tests and small inputs; use TreeFrontier for a growing log.
 */
export async function rootFromLeafHashes(hashes: readonly Uint8Array[]): Promise<Uint8Array> {
  if (hashes.length === 0) return emptyRoot();
  if (hashes.length === 1) return hashes[0];
  const k = splitPoint(hashes.length);
  const [l, r] = await Promise.all([rootFromLeafHashes(hashes.slice(0, k)), rootFromLeafHashes(hashes.slice(k))]);
  return nodeHash(l, r);
}

/**
 * Root of a tree given its perfect-subtree roots left to right (largest
 * first), as in a frontier or a right-border decomposition.
 */
export async function rootFromSubtrees(subtrees: readonly Uint8Array[]): Promise<Uint8Array> {
  if (subtrees.length === 0) return emptyRoot();
  let root = subtrees[subtrees.length - 1];
  for (let i = subtrees.length - 2; i >= 0; i--) root = await nodeHash(subtrees[i], root);
  return root;
}

/** Level of each frontier entry for a tree of `size`, largest subtree first. */
export function frontierLevels(size: number): number[] {
  const levels: number[] = [];
  for (let level = 0, s = size; s > 0; level++, s = Math.floor(s / 2)) if (s % 2 === 1) levels.unshift(level);
  return levels;
}

export interface FrontierJson {
  size: number;
  /** Base64 perfect-subtree roots, largest subtree first. */
  hashes: string[];
}

/**
 * The right border of a Merkle tree: one perfect-subtree root per set bit of
 * the size. Appending is O(log n) hashes and the whole state is at most 53
 * hashes, small enough for a Durable Object to rewrite on every append.
 */
export class TreeFrontier {
  // Plain fields, not constructor parameter properties: Node's type stripping
  // (the CLI scripts run this file directly) does not support those.
  private treeSize: number;
  private subtrees: Uint8Array[];

  private constructor(treeSize: number, subtrees: Uint8Array[]) {
    this.treeSize = treeSize;
    this.subtrees = subtrees;
  }

  static empty(): TreeFrontier {
    return new TreeFrontier(0, []);
  }

  static fromJSON(json: FrontierJson): TreeFrontier {
    if (!json || !isCount(json.size) || !Array.isArray(json.hashes)) throw new LogFormatError("malformed frontier");
    if (json.hashes.length !== frontierLevels(json.size).length) throw new LogFormatError("frontier hash count does not match size");
    const hashes = json.hashes.map((h) => {
      const bytes = typeof h === "string" ? base64Decode(h) : new Uint8Array(0);
      if (bytes.length !== HASH_SIZE) throw new LogFormatError("malformed frontier hash");
      return bytes;
    });
    return new TreeFrontier(json.size, hashes);
  }

  get size(): number {
    return this.treeSize;
  }

  /** Perfect-subtree roots, largest first; see frontierLevels for their levels. */
  get hashes(): readonly Uint8Array[] {
    return this.subtrees;
  }

  toJSON(): FrontierJson {
    return { size: this.treeSize, hashes: this.subtrees.map(base64Encode) };
  }

  clone(): TreeFrontier {
    return new TreeFrontier(this.treeSize, this.subtrees.slice());
  }

  root(): Promise<Uint8Array> {
    return rootFromSubtrees(this.subtrees);
  }

  /** Appends one leaf hash; returns every node it completed, the leaf first. */
  append(leaf: Uint8Array): Promise<TreeNode[]> {
    return this.appendMany([leaf]);
  }

  /**
   * Appends leaf hashes in a batch. Each level's new nodes are hashed in
   * parallel, so a large batch costs about log n round trips to the digest
   * API instead of one per node. Returns every completed node, level by level.
   */
  async appendMany(leaves: readonly Uint8Array[]): Promise<TreeNode[]> {
    for (const leaf of leaves) if (leaf.length !== HASH_SIZE) throw new TypeError("leaf hash must be 32 bytes");
    if (!isCount(this.treeSize + leaves.length)) throw new RangeError("tree too large");
    const levels = frontierLevels(this.treeSize);
    const old = new Map(levels.map((level, i) => [level, this.subtrees[i]]));
    const created: TreeNode[] = [];
    // Newly completed nodes at the current level occupy indexes [start, start + run.length).
    let start = this.treeSize;
    let run = leaves.slice();
    run.forEach((hash, i) => created.push({ level: 0, index: start + i, hash }));
    const border = new Map<number, Uint8Array>();
    for (let level = 0; run.length > 0; level++) {
      const end = start + run.length;
      // An odd start means the left sibling of the first new node is the old frontier entry.
      const row = start % 2 === 1 ? [old.get(level)!, ...run] : run;
      const rowStart = start % 2 === 1 ? start - 1 : start;
      if (end % 2 === 1) border.set(level, row[row.length - 1]);
      const pairs = Math.floor(row.length / 2);
      const next = await Promise.all(Array.from({ length: pairs }, (_, i) => nodeHash(row[2 * i], row[2 * i + 1])));
      start = rowStart / 2;
      run = next;
      run.forEach((hash, i) => created.push({ level: level + 1, index: start + i, hash }));
    }
    this.treeSize += leaves.length;
    // Levels above the last new node keep their old frontier entries.
    const newLevels = frontierLevels(this.treeSize);
    this.subtrees = newLevels.map((level) => border.get(level) ?? old.get(level)!);
    return created;
  }
}
