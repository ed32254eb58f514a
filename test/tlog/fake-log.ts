/** An in-memory tiled log served through a fake fetch, for the monitor tests. */
import { signCheckpoint } from "../../src/tlog/checkpoint";
import { utf8 } from "../../src/tlog/encoding";
import { TreeFrontier } from "../../src/tlog/merkle";
import type { FetchLike, FetchResponseLike } from "../../src/tlog/monitor";
import { type NoteSigner, createNoteSigner, formatVkey } from "../../src/tlog/note";
import { appendLeaves, readTile } from "../../src/tlog/tile-builder";
import { parseTilePath } from "../../src/tlog/tiles";

export const BASE = "https://witness.example/logs/abc";
export const ORIGIN = "witness.example/logs/abc";

export async function newSigner(name = ORIGIN): Promise<{ signer: NoteSigner; vkey: string }> {
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const pub = new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer);
  return { signer: await createNoteSigner(name, pair.privateKey, pub), vkey: await formatVkey(name, pub) };
}

const respond = (status: number, body: Uint8Array = new Uint8Array(0)): FetchResponseLike => ({
  ok: status >= 200 && status < 300,
  status,
  arrayBuffer: async () => body.slice().buffer as ArrayBuffer,
});

export class FakeLog {
  /** Tile entries by tile level, as a server would store them. */
  readonly entries: Uint8Array[][] = [];
  readonly roots = new Map<number, Uint8Array>();
  size = 0;
  checkpoint = "";
  /** Test hooks: replace a response by path (relative to BASE), or fail the network. */
  override = new Map<string, FetchResponseLike | "throw">();
  requests: string[] = [];

  /** Builds the tree over `leaves`, recording the root at each size in `sizes`. */
  static async build(leaves: Uint8Array[], sizes: number[]): Promise<FakeLog> {
    const log = new FakeLog();
    const frontier = TreeFrontier.empty();
    for (const size of [...sizes].sort((a, b) => a - b)) {
      for (const e of await appendLeaves(frontier, leaves.slice(frontier.size, size))) {
        (log.entries[e.tileLevel] ??= [])[e.index] = e.hash;
      }
      log.roots.set(size, await frontier.root());
    }
    return log;
  }

  /** Serves the tree at `size` with a checkpoint signed by `signer` (root overridable to forge). */
  async publish(size: number, signer: NoteSigner, rootHash = this.roots.get(size)!): Promise<void> {
    this.size = size;
    this.checkpoint = await signCheckpoint({ origin: ORIGIN, size, rootHash }, signer);
  }

  get tileRequests(): string[] {
    return this.requests.filter((p) => p.startsWith("tile/"));
  }

  readonly fetch: FetchLike = async (url) => {
    if (!url.startsWith(`${BASE}/`)) return respond(404);
    const path = url.slice(BASE.length + 1);
    this.requests.push(path);
    const o = this.override.get(path);
    if (o === "throw") throw new TypeError("network down");
    if (o) return o;
    if (path === "checkpoint") return respond(200, utf8.encode(this.checkpoint));
    const tile = parseTilePath(path);
    if (!tile) return respond(404);
    const read = async (level: number, start: number, count: number) => (this.entries[level] ?? []).slice(start, start + count);
    const body = await readTile(read, tile, this.size);
    return body ? respond(200, body) : respond(404);
  };

  static respond = respond;
}
