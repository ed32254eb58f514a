export interface PublicKey {
  kid: string | null;
  x: string;
}
export function canonicalize(value: unknown): string;
/** JSON.parse that throws a SyntaxError on a key repeated in one object, at any depth. */
export function parseJsonStrict(text: string): unknown;
export function parsePublicKeys(text: string): PublicKey[];
export function unwrapReceipt(doc: unknown): unknown;
/** The receipt in JSON text, bare or in its `{ data }` envelope; throws unless strict JSON. */
export function readReceipt(text: string): unknown;
export interface TlogEntry {
  ok: true;
  origin: string;
  index: number;
  tree_size: number;
  kid: string | null;
}
export function verifyTlogEntry(receipt: unknown, keys: PublicKey[]): Promise<TlogEntry | { ok: false; reason: string }>;
/** receipt: the JSON text as received (duplicate keys fail it) or the parsed receipt; `valid` must be true. */
export function verifyReceipt(
  receipt: unknown,
  keys: PublicKey[],
): Promise<{ ok: true; kid: string; tlog?: TlogEntry } | { ok: false; reason: string }>;
