// What a reader's browser can check of the receipt page (GET /receipts/<id>):
// the signed receipt the page carries, with the client's dependency-free check
// (src/client/receipt-check.js) and the keys this service publishes. The
// server's own checks (content hash, chain signature, links) need the stored
// event and a secret key, so a browser cannot repeat them; these it can, and
// each says on its own whether it passed. No DOM here: check-browser.js shows
// the result, and test/pages/public-pages.test.ts runs this in workerd.
import { readReceipt, verifyReceipt, verifyTlogEntry } from "../../client/receipt-check.js";

/** The page's fields the receipt's signature must cover (valid: the server's verdict), in the order a mismatch names them. */
export const SIGNED_FIELDS = ["event_id", "action", "seq", "hash", "valid"];

/** Reasons src/tlog gives when the checkpoint itself does not verify (as opposed to the proof under it). */
const CHECKPOINT_FAILURE = /^(malformed note|invalid signature for key|no signature by a known key|malformed checkpoint|checkpoint origin)/;
const UNSIGNED = /^(no signature by a known key|no key given)$/;

const skip = (why) => ({ state: "skip", why });

/** verifyTlogEntry wraps the reason of the key it tried last: unwrap it. */
function innerReason(reason) {
  const m = /^tlog_proof does not verify against the published keys \((.*)\)$/s.exec(reason);
  return m ? m[1] : reason;
}

/**
 * The log proof, key by key: verifyTlogEntry reports only the last key's
 * reason, which after a rotation may be "no signature by a known key" from a
 * key that never signed, hiding why the signer's own proof failed.
 */
async function tlogResult(receipt, keys) {
  let fallback = null;
  for (const key of keys.length > 0 ? keys : [null]) {
    const result = await verifyTlogEntry(receipt, key ? [key] : []);
    if (result.ok) return result;
    const reason = innerReason(result.reason);
    if (!UNSIGNED.test(reason)) return { ok: false, reason };
    fallback ??= { ok: false, reason };
  }
  return fallback;
}

function logStages(receipt, tlog) {
  if (tlog.ok) {
    return {
      checkpoint: { state: "pass", origin: tlog.origin, treeSize: tlog.tree_size, kid: tlog.kid },
      inclusion: { state: "pass", index: tlog.index, treeSize: tlog.tree_size },
    };
  }
  const reason = tlog.reason;
  if (/^tlog_proof is malformed/.test(reason)) {
    return { checkpoint: { state: "fail", reason }, inclusion: skip("the log proof cannot be read") };
  }
  if (CHECKPOINT_FAILURE.test(reason)) {
    return { checkpoint: { state: "fail", reason }, inclusion: skip("the checkpoint's signature did not verify") };
  }
  return { checkpoint: { state: "pass", signedOnly: true }, inclusion: { state: "fail", reason } };
}

function pageStage(receipt, shown) {
  const differ = SIGNED_FIELDS.filter((f) => shown[f] !== undefined && String(receipt[f]) !== String(shown[f]));
  const missing = SIGNED_FIELDS.filter((f) => shown[f] === undefined);
  if (differ.length > 0) return { state: "fail", fields: differ };
  if (missing.length > 0) return { state: "fail", fields: missing, missing: true };
  return { state: "pass" };
}

/**
 * Checks the receipt text the page carries. `shown` is what the page displays
 * for SIGNED_FIELDS (as text). Every stage is { state: pass|fail|skip, ... };
 * `outcome` is "verified" (all passed), "partial" (passed, but the receipt has
 * no log proof yet) or "failed".
 */
export async function checkReceiptPage(text, keys, shown) {
  let receipt = null;
  try {
    receipt = readReceipt(text);
  } catch {
    // verifyReceipt says why
  }
  const result = await verifyReceipt(receipt ?? String(text), keys);
  // verifyReceipt checks format, then the signature, then the log proof, then the issuance verdict.
  const signed = result.ok || /^(tlog_proof|the receipt's hash is malformed|the receipt is genuine)/.test(result.reason);
  if (!signed) {
    const after = skip("the receipt's signature did not verify");
    return { receipt, outcome: "failed", signature: { state: "fail", reason: result.reason }, checkpoint: after, inclusion: after, page: after };
  }
  const signature = { state: "pass", kid: receipt.proof.kid };
  const page = pageStage(receipt, shown);
  let log;
  if (receipt.tlog_proof === null || receipt.tlog_proof === undefined) {
    const none = skip("no log proof: the project's transparency log was still being built when this receipt was signed");
    log = { checkpoint: none, inclusion: none };
  } else {
    log = logStages(receipt, await tlogResult(receipt, keys));
  }
  const stages = [signature, log.checkpoint, log.inclusion, page];
  const outcome = stages.some((s) => s.state === "fail") ? "failed" : stages.every((s) => s.state === "pass") ? "verified" : "partial";
  return { receipt, outcome, signature, checkpoint: log.checkpoint, inclusion: log.inclusion, page };
}
