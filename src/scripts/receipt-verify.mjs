// npm run receipt:verify -- <receipt.json> [--key <file or key>] [--keys-url <url>] [--fetch]
// Checks a receipt's Ed25519 proof, and its transparency log proof (tlog_proof),
// with only the public key. With --key it is fully offline: no network, no
// database, no API key.
import { existsSync, readFileSync } from "node:fs";
import { parsePublicKeys, readReceipt, verifyReceipt } from "./receipt-check.mjs";

const USAGE = `usage: npm run receipt:verify -- <receipt.json> (--key <file|key> | --keys-url <url> | --fetch)
  --key <file|key>   public key(s): a saved /.well-known/witness-keys.json, one JWK, <kid>:<x> or x (offline)
  --keys-url <url>   fetch the key set from this URL
  --fetch            fetch it from the origin named in the receipt (trusts that origin)`;

function fail(message, code = 2) {
  console.error(`error: ${message}\n${USAGE}`);
  process.exit(code);
}

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  if (i === -1) return null;
  const value = args[i + 1];
  if (!value || value.startsWith("--")) fail(`${name} needs a value`);
  args.splice(i, 2);
  return value;
};
const keyArg = option("--key");
const keysUrl = option("--keys-url");
const fetchFlag = args.includes("--fetch");
if (fetchFlag) args.splice(args.indexOf("--fetch"), 1);
if (args.length !== 1 || args[0].startsWith("--")) fail("give exactly one receipt file");

let text;
try {
  text = readFileSync(args[0], "utf8");
  JSON.parse(text);
} catch (error) {
  fail(`cannot read ${args[0]} as JSON (${error.message})`);
}
let receipt;
try {
  // Strict: a key given twice means two readings of one receipt (see parseJsonStrict).
  receipt = readReceipt(text);
} catch (error) {
  console.log(`INVALID: the receipt is not strict JSON (${error.message})`);
  process.exit(1);
}

async function keySource() {
  if (keyArg) return existsSync(keyArg) ? readFileSync(keyArg, "utf8") : keyArg;
  if (!keysUrl && !fetchFlag) fail("say where the public key comes from");
  let url = keysUrl;
  try {
    url ??= new URL("/.well-known/witness-keys.json", receipt?.verification_url).href;
  } catch {
    fail("the receipt names no valid verification_url to fetch keys from");
  }
  const res = await fetch(url);
  if (!res.ok) fail(`${url} answered ${res.status}`);
  return res.text();
}

let keys;
const source = await keySource();
try {
  keys = parsePublicKeys(source);
} catch (error) {
  fail(`cannot read the public keys (${error.message})`);
}
// Fails a receipt that says valid: false too, after checking it is genuine.
const result = await verifyReceipt(receipt, keys);
if (!result.ok) {
  console.log(`INVALID: ${result.reason}`);
  process.exit(1);
}
console.log(`Signature OK (key ${result.kid}): Witness issued this receipt at ${receipt.issued_at}.`);
console.log(`  event ${receipt.event_id}  ${receipt.action}  at ${receipt.occurred_at}  (chain position #${receipt.seq})`);
console.log(`  hash ${receipt.hash}`);
if (result.tlog) {
  console.log(`Transparency log OK: the event is leaf ${result.tlog.index} of ${result.tlog.origin} in its signed checkpoint of ${result.tlog.tree_size} events.`);
} else {
  console.log("No transparency log proof in this receipt (it was issued while the project's log was being built).");
}
console.log(`The event was intact when the receipt was issued. For its state now, open ${receipt.view_url}`);
