// WebCrypto for the client on every runtime it supports. Browsers, Workers and
// Node 19+ have it as the global `crypto`; Node 18 has it only as node:crypto's
// `webcrypto`, imported here on that path alone. The global is never set: a
// library should not change its host's globals.

// In a variable, and with the bundlers' ignore hints, so that browser bundlers
// do not try to resolve a Node built-in that their users never load.
const NODE_CRYPTO = "node:crypto";

/**
 * The WebCrypto object once known. The bundled receipt check (receipt-check.js)
 * reads this live binding wherever its source says `crypto`.
 */
export let crypto = globalThis.crypto?.subtle ? globalThis.crypto : undefined;

/** Resolves WebCrypto; on Node 18 the first call imports node:crypto. */
export async function loadCrypto() {
  if (crypto) return crypto;
  let found;
  try {
    found = (await import(/* webpackIgnore: true */ /* @vite-ignore */ NODE_CRYPTO)).webcrypto;
  } catch {
    // A browser page served over plain http has `crypto` but no `crypto.subtle`.
  }
  if (!found?.subtle) throw new Error("WebCrypto (crypto.subtle) is not available here; browsers offer it on https pages only");
  crypto = found;
  return crypto;
}
