// npm run keys:receipt [-- --kid <id>] [--file <path>] [--put] [--env <name>]
// A new Ed25519 receipt key as RECEIPT_SIGNING_KEYS holds it (<kid>:<base64url PKCS#8 DER>,
// src/sealing/receipt-signing.ts), made with Node's crypto: no openssl (macOS's LibreSSL
// cannot make Ed25519 keys, and a failed one-liner silently stored "<date>:").
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { generateKeyPairSync } from "node:crypto";
import { receiptKeysProblems } from "./deploy-rules.mjs";
import { ENV, parseCommand, ROOT, WRANGLER } from "./lib.mjs";

const USAGE = `usage: npm run keys:receipt [-- --kid <id>] [--file <path>] [--put] [--env <name>]
  (nothing)      prints the value on stdout: npm run -s keys:receipt (-s keeps npm's banner out of a pipe)
  --kid <id>     the key id, 1-64 letters, digits, '.', '_' or '-' (default: today, like 2026-11-25)
  --file <path>  keep the secret's whole value in this file (mode 600): a new file holds the new key;
                 an existing one gets the new key appended (rotation: old receipts keep verifying)
  --put          store the value (the file's, with --file) as RECEIPT_SIGNING_KEYS: wrangler secret put
  --env <name>   the wrangler environment for --put`;

const { flags, options } = parseCommand(process.argv.slice(2), { usage: USAGE, flags: ["--put"], options: ["--kid", "--file", "--env"] });
const refuse = (message) => {
  console.error(`error: ${message}`);
  process.exit(1);
};
const kid = options["--kid"] ?? new Date().toISOString().slice(0, 10);
if (!/^[A-Za-z0-9._-]{1,64}$/.test(kid)) refuse(`--kid ${JSON.stringify(kid)}: a key id is 1-64 letters, digits, '.', '_' or '-'`);

const der = generateKeyPairSync("ed25519").privateKey.export({ format: "der", type: "pkcs8" });
const entry = `${kid}:${der.toString("base64url")}`;

let value = entry;
const file = options["--file"];
if (file) {
  const old = existsSync(file) ? readFileSync(file, "utf8").trim() : "";
  const problems = old ? receiptKeysProblems(old) : [];
  if (problems.length > 0) refuse(`${file} does not hold RECEIPT_SIGNING_KEYS: ${problems[0]}`);
  if (old.split(",").some((e) => e.trim().startsWith(`${kid}:`))) refuse(`${file} already has a key ${kid}: pass another --kid`);
  value = old ? `${old},${entry}` : entry;
  writeFileSync(file, `${value}\n`, { mode: 0o600 });
  console.error(`${old ? "Appended" : "Wrote"} receipt key ${kid} to ${file}${old ? ` (now ${value.split(",").length} keys; the last signs)` : ""}. Keep it safe and out of git.`);
}

if (flags.has("--put")) {
  const args = ["secret", "put", "RECEIPT_SIGNING_KEYS", ...(options["--env"] ? ["--env", options["--env"]] : [])];
  const res = spawnSync(WRANGLER, args, { cwd: ROOT, env: ENV, input: value, stdio: ["pipe", "inherit", "inherit"] });
  if (res.status !== 0) refuse(`wrangler ${args.join(" ")} failed${file ? `; the value is kept in ${file}` : ""}`);
  if (!file) console.error("Stored. This key exists nowhere else now: rotation needs the old entries, so next time pass --file to keep a copy.");
} else if (!file) {
  // npm run (without -s) has already printed its banner on this stdout: a pipe would store it in the secret.
  // Only when npm runs this very script: a test run through another npm script inherits npm_* too.
  if (!process.stdout.isTTY && process.env.npm_lifecycle_event === "keys:receipt" && process.env.npm_config_loglevel !== "silent") {
    refuse("npm printed its banner into this pipe (a secret put reading it stores the banner): run npm run -s keys:receipt, or use --put");
  }
  console.log(value);
}
