/**
 * A stream's bytes, never more than `limit` of them in memory: past the
 * limit the stream is cancelled (so the rest need not be received) and
 * `over` says how many bytes had arrived by then.
 */
export async function readCapped(stream: ReadableStream<Uint8Array>, limit: number): Promise<{ bytes: Uint8Array } | { over: number }> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      return { over: total };
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return { bytes: chunks[0] };
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return { bytes };
}
