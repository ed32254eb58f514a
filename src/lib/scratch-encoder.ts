const encoder = new TextEncoder();

/**
 * A reusable buffer that texts are UTF-8 encoded into right before a digest
 * or HMAC: sealing and verify run one per event, and a buffer per event was a
 * visible share of their time. Web Crypto copies its input when it is called
 * (workerd digests synchronously), so a caller that encodes and then calls
 * Web Crypto before its next await may share the buffer with concurrent
 * callers of the same encoder.
 */
export function scratchEncoder() {
  let buffer = new Uint8Array(16 * 1024);
  return {
    /** Encodes `text` at byte `at` (growing the buffer as needed); returns where it ends. */
    encodeAt(text: string, at: number): number {
      if (buffer.length < at + text.length * 3) {
        const grown = new Uint8Array(Math.max(buffer.length * 2, at + text.length * 3));
        grown.set(buffer.subarray(0, at));
        buffer = grown;
      }
      return at + encoder.encodeInto(text, buffer.subarray(at)).written;
    },
    /** The encoded bytes from `from` to `to`, valid until the next encodeAt. */
    bytes(from: number, to: number): Uint8Array {
      return buffer.subarray(from, to);
    },
  };
}
