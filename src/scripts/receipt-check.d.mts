export interface PublicKey {
  kid: string | null;
  x: string;
}
export function canonicalize(value: unknown): string;
export function parsePublicKeys(text: string): PublicKey[];
export function unwrapReceipt(doc: unknown): unknown;
export interface TlogEntry {
  ok: true;
  origin: string;
  index: number;
  tree_size: number;
  kid: string | null;
}
export function verifyTlogEntry(receipt: unknown, keys: PublicKey[]): Promise<TlogEntry | { ok: false; reason: string }>;
export function verifyReceipt(
  receipt: unknown,
  keys: PublicKey[],
): Promise<{ ok: true; kid: string; tlog?: TlogEntry } | { ok: false; reason: string }>;
