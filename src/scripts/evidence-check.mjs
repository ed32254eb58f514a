// Offline check of an evidence export (DESIGN "Jobs"): with only the log's
// verifier key, that the files are exactly the events the manifest names,
// unaltered, in the log's tree, and (without filters) that none is missing.
// Plain JavaScript on WebCrypto plus src/tlog, like receipt-check.mjs: Node runs
// it as it is (npm run export:verify) and the client ships it bundled
// (src/client/evidence-check.js) for browsers, with no dependency.
import { verifyCheckpoint } from "../tlog/checkpoint.ts";
import { base64Decode, base64Encode, hexDecode } from "../tlog/encoding.ts";
import { leafHash } from "../tlog/merkle.ts";
import { rootFromMultiproof } from "../tlog/multiproof.ts";
import { parseVkey, verifyNote } from "../tlog/note.ts";
import { canonicalize, parseJsonStrict } from "./receipt-check.mjs";

export const EVIDENCE_TYPE = "witness.evidence.v1";
const OLD_KEYS = [
  "id", "project_id", "seq", "action", "organization", "actor", "targets", "metadata", "occurred_at", "ip_address",
  "user_agent", "hash", "prev_hash", "signature", "pii_commitment", "anonymized_at", "pii_salt",
];
// Exports made since the action catalog (issue 35) also carry these; earlier ones keep checking.
const ROW_KEYS = [OLD_KEYS.sort().join(), [...OLD_KEYS, "changes", "schema_version", "schema_valid", "display"].sort().join()];

const utf8 = new TextEncoder();
const hex = (bytes) => [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
const sha256 = async (bytes) => new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));

class Failure extends Error {}
const fail = (message) => {
  throw new Failure(message);
};

/** The manifest, its signature checked: the parsed body, or a Failure. */
async function openManifest(text, verifier) {
  let manifest;
  try {
    manifest = parseJsonStrict(text);
  } catch (error) {
    fail(`manifest.json is not strict JSON (${error.message})`);
  }
  if (!manifest || manifest.type !== EVIDENCE_TYPE) fail(`manifest.json is not a ${EVIDENCE_TYPE} manifest`);
  const { signature, ...body } = manifest;
  if (typeof signature !== "string") fail("manifest.json carries no signature");
  const opened = await verifyNote(signature, verifier);
  if (!opened.ok) fail(`the manifest's signature does not verify with this key (${opened.reason})`);
  const digest = base64Encode(await sha256(utf8.encode(canonicalize(body))));
  if (opened.text !== `${EVIDENCE_TYPE}\n${verifier.name}\n${digest}\n`) fail("the manifest was changed after the log signed it");
  if (body.origin !== verifier.name) fail(`the manifest is for log ${JSON.stringify(body.origin)}, the key for ${JSON.stringify(verifier.name)}`);
  if (!Array.isArray(body.files) || !Array.isArray(body.gaps) || !Number.isSafeInteger(body.tree_size)) fail("manifest.json is malformed");
  return body;
}

/** A row's hash and leaf, recomputed from its fields as Witness computed them at ingest. */
async function rowLeaf(row, projectId) {
  if (!row || typeof row !== "object" || !ROW_KEYS.includes(Object.keys(row).sort().join())) fail(`row ${row?.seq ?? "?"} does not have the evidence row's fields`);
  if (row.project_id !== projectId) fail(`row ${row.seq} belongs to project ${JSON.stringify(row.project_id)}`);
  const actor = row.actor ?? { id: null, type: null, name: null, email: null };
  const pii = { actor_email: actor.email, actor_id: actor.id, actor_name: actor.name, ip_address: row.ip_address, user_agent: row.user_agent };
  let erased = false;
  if (typeof row.pii_salt === "string") {
    if (hex(await sha256(utf8.encode(row.pii_salt + canonicalize(pii)))) !== row.pii_commitment) fail(`row ${row.seq}: its personal data does not match its commitment`);
  } else if (row.pii_salt === null && Object.values(pii).every((v) => v === null)) {
    erased = true; // lawfully erased: the commitment stands in for the data, as the chain allows
  } else fail(`row ${row.seq}: personal data without the salt that proves it`);
  // The catalog's fields are in the payload only when present (src/sealing/payload.ts).
  const catalog = {
    ...(row.changes == null ? {} : { changes: row.changes }),
    ...(row.schema_version == null ? {} : { schema_version: row.schema_version, schema_valid: row.schema_valid === true }),
  };
  const payload = canonicalize({
    action: row.action, actor_type: actor.type, id: row.id, metadata: row.metadata, occurred_at: row.occurred_at,
    organization: row.organization, pii: row.pii_commitment, project_id: row.project_id, seq: row.seq, targets: row.targets, v: 1,
    ...catalog,
  });
  if (hex(await sha256(utf8.encode((row.prev_hash ?? "") + payload))) !== row.hash) fail(`row ${row.seq}: its fields do not give its hash (altered)`);
  return { leaf: await leafHash(hexDecode(row.hash)), erased };
}

/**
 * Checks an evidence export. `readFile(name)` gives a file's bytes or null;
 * `names` (optional) every file present, so one the manifest does not list
 * is refused. Resolves to { ok: true, ... } or { ok: false, reason }.
 */
export async function checkEvidence({ manifest: manifestText, vkey, readFile, names = null }) {
  try {
    let verifier;
    try {
      verifier = await parseVkey(vkey);
    } catch (error) {
      fail(`the verifier key is malformed (${error.message})`);
    }
    const m = await openManifest(manifestText, verifier);
    const cp = await verifyCheckpoint(m.checkpoint, verifier);
    if (!cp.ok) fail(`the manifest's checkpoint is not this log's (${cp.reason})`);
    if (cp.checkpoint.size !== m.tree_size) fail("the manifest's tree_size is not its checkpoint's");
    const size = m.tree_size;
    const seen = new Uint8Array(size + 1);
    let previous = null;
    let rows = 0;
    let erased = 0;
    for (const file of m.files) {
      const bytes = await readFile(file.name);
      if (bytes === null) fail(`${file.name} is missing`);
      if (bytes.length !== file.bytes || hex(await sha256(bytes)) !== file.sha256) fail(`${file.name} is not the file the manifest names (size or SHA-256 differs)`);
      let part;
      try {
        part = parseJsonStrict(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
      } catch (error) {
        fail(`${file.name} is not strict JSON (${error.message})`);
      }
      if (part?.type !== `${EVIDENCE_TYPE}.part` || part.tree_size !== size || !Array.isArray(part.rows) || !Array.isArray(part.proof)) fail(`${file.name} is not a part of this export`);
      if (part.rows.length !== file.rows) fail(`${file.name} holds ${part.rows.length} rows, the manifest says ${file.rows}`);
      const leaves = [];
      for (const row of part.rows) {
        if (!Number.isSafeInteger(row?.seq) || row.seq < 1 || row.seq > size) fail(`${file.name}: a row outside the tree of ${size}`);
        if (seen[row.seq]) fail(`row ${row.seq} appears twice`);
        seen[row.seq] = 1;
        // Export order: newest occurred_at first, then seq descending.
        if (previous && !(row.occurred_at < previous.occurred_at || (row.occurred_at === previous.occurred_at && row.seq < previous.seq))) fail(`row ${row.seq} is out of the export's order`);
        previous = row;
        const checked = await rowLeaf(row, m.project_id);
        if (checked.erased) erased++;
        leaves.push({ index: row.seq - 1, leaf: checked.leaf });
      }
      leaves.sort((a, b) => a.index - b.index);
      let proof;
      try {
        proof = part.proof.map((h) => base64Decode(h));
      } catch {
        fail(`${file.name}: its proof is malformed`);
      }
      const root = leaves.length === 0 ? null : await rootFromMultiproof(leaves.map((l) => l.index), leaves.map((l) => l.leaf), size, proof);
      if (!root || base64Encode(root) !== base64Encode(cp.checkpoint.rootHash)) fail(`${file.name}: its rows are not where the proof puts them in the signed tree`);
      rows += part.rows.length;
    }
    if (rows !== m.rows) fail(`the files hold ${rows} rows, the manifest says ${m.rows}`);
    if (names) {
      const listed = new Set(["manifest.json", ...m.files.map((f) => f.name)]);
      const extra = names.filter((n) => !listed.has(n));
      if (extra.length > 0) fail(`${extra[0]} is not part of this export`);
    }
    if (m.complete) {
      for (const gap of m.gaps) for (let s = Math.max(1, gap.first_seq); s <= Math.min(size, gap.last_seq); s++) seen[s] = 1;
      const missing = seen.indexOf(0, 1);
      if (missing !== -1) fail(`event ${missing} is missing from an export that claims all of 1..${size}`);
    }
    return { ok: true, rows, erased, tree_size: size, complete: m.complete === true, gaps: m.gaps.length, origin: m.origin, filters: m.filters };
  } catch (error) {
    if (error instanceof Failure) return { ok: false, reason: error.message };
    throw error;
  }
}
