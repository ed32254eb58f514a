/**
 * Full tiles never change, so once published they go to R2 and are served
 * from there with long-lived cache headers (routes/logs.ts). Uploads run in
 * the background of the ledger, off the commit path; a lost one costs
 * nothing but a detour: the route falls back to the ledger and stores the
 * tile itself. Only the ledger's published tiles are ever written.
 */
import { newTiles, TILE_WIDTH, encodeTile, tilePath } from "./tiles.ts";

/** Where a tile lives in the LOGS bucket; `path` is its tlog-tiles path (tile/<L>/<N>). */
export const tileObjectKey = (logId: string, path: string) => `tiles/${logId}/${path}`;

export class TileUploads {
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly bucket: R2Bucket,
    private readonly label: string,
  ) {}

  /**
   * Queues the full tiles a tree completed growing from oldSize to newSize.
   * Their bytes are read now (synchronously, from `read`), so the upload
   * never sees a later state.
   */
  queue(logId: () => Promise<string>, oldSize: number, newSize: number, read: (level: number, start: number, count: number) => Uint8Array[]): void {
    const full = newTiles(oldSize, newSize).filter((t) => t.width === TILE_WIDTH);
    if (full.length === 0) return;
    const bodies = full.map((t) => ({ path: tilePath(t.level, t.index), bytes: encodeTile(read(t.level, t.index * TILE_WIDTH, TILE_WIDTH)) }));
    this.chain = this.chain
      .then(async () => {
        const id = await logId();
        await Promise.all(bodies.map(({ path, bytes }) => this.bucket.put(tileObjectKey(id, path), bytes)));
      })
      .catch((err) => console.warn(`log ${this.label}: tile upload failed (reads fall back to the ledger)`, err));
  }

  /** Resolves when every queued upload is done. */
  flush(): Promise<void> {
    return this.chain;
  }
}
