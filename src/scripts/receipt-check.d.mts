export interface PublicKey {
  kid: string | null;
  x: string;
}
export function canonicalize(value: unknown): string;
export function parsePublicKeys(text: string): PublicKey[];
export function unwrapReceipt(doc: unknown): unknown;
export function verifyReceipt(receipt: unknown, keys: PublicKey[]): Promise<{ ok: true; kid: string } | { ok: false; reason: string }>;
