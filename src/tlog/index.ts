/**
 * Transparency log library: RFC 6962 Merkle trees and the C2SP formats
 * (signed-note, tlog-checkpoint, tlog-tiles, tlog-proof). Pure Web APIs only
 * (crypto.subtle, TextEncoder, atob/btoa), so it runs in Workers, Node 18+
 * and browsers; nothing here imports from outside src/tlog. Imports name
 * their .ts files so Node runs these modules as they are (type stripping),
 * as the CLI scripts do. The per-project log that stores them (src/log/,
 * on Durable Object storage, D1 and R2) sits a layer above.
 */
export * from "./encoding.ts";
export * from "./merkle.ts";
export * from "./proofs.ts";
export * from "./tiles.ts";
export * from "./tile-builder.ts";
export * from "./note.ts";
export * from "./checkpoint.ts";
export * from "./tlog-proof.ts";
export * from "./monitor.ts";
export * from "./cosignature.ts";
