// npm run log:monitor -- <public_url> --vkey <vkey> [--state <file>]
// The customer's watchdog for one project's transparency log: checks the newest
// checkpoint is signed by the pinned key and, from tiles it fetches itself,
// that it extends the checkpoint saved last time; then saves the new one.
// Exit 0 (last line `ok <tree_size> <root_hash>`), 1 (a line starting FAIL:
// evidence against the log; the saved state is kept), 2 (usage or network).
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { monitorLog } from "../tlog/monitor.ts";

const USAGE = `usage: npm run log:monitor -- <public_url> --vkey <vkey> [--state <file>]
  <public_url>    the log's address, https://<host>/logs/<log_id> (GET /v1/log: public_url)
  --vkey <vkey>   the log's verifier key, pinned once (GET /v1/log: vkey)
  --state <file>  where the last good checkpoint is kept (default: log-monitor-<log_id>.json)`;

function usage(message) {
  console.error(`error: ${message}\n${USAGE}`);
  process.exit(2);
}

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  if (i === -1) return null;
  const value = args[i + 1];
  if (!value || value.startsWith("--")) usage(`${name} needs a value`);
  args.splice(i, 2);
  return value;
};
const vkey = option("--vkey");
const stateArg = option("--state");
if (args.length !== 1 || args[0].startsWith("--")) usage("give exactly one public_url");
if (!vkey) usage("--vkey is required: pin the key you got from GET /v1/log");
const publicUrl = args[0];
try {
  if (!/^https?:$/.test(new URL(publicUrl).protocol)) throw new Error();
} catch {
  usage(`${publicUrl} is not an http(s) URL`);
}
const statePath = stateArg ?? `log-monitor-${publicUrl.replace(/\/+$/, "").split("/").pop().replace(/[^A-Za-z0-9._-]/g, "_")}.json`;

let saved = null;
if (existsSync(statePath)) {
  try {
    saved = JSON.parse(readFileSync(statePath, "utf8"));
  } catch (error) {
    usage(`cannot read ${statePath} (${error.message})`);
  }
  // One state file per log: comparing one log's tree against another's would only mislead.
  if (saved.vkey !== vkey || saved.public_url !== publicUrl) usage(`${statePath} belongs to another log or key (${saved.public_url})`);
}

const result = await monitorLog({ publicUrl, vkey, saved: saved && { tree_size: saved.tree_size, root_hash: saved.root_hash } });
if (result.status === "error") {
  console.error(`error: ${result.message}`);
  process.exit(2);
}
if (result.status === "fail") {
  console.log(`FAIL ${result.reason}`);
  if (saved) console.log(`  last good checkpoint (kept in ${statePath}): size ${saved.tree_size}, root ${saved.root_hash}, seen ${saved.checked_at}`);
  process.exit(1);
}
const state = { public_url: publicUrl, vkey, tree_size: result.tree_size, root_hash: result.root_hash, checkpoint: result.checkpoint, checked_at: new Date().toISOString() };
writeFileSync(`${statePath}.tmp`, `${JSON.stringify(state, null, 2)}\n`);
renameSync(`${statePath}.tmp`, statePath);
if (!saved) console.log(`first run: trusting and saving this checkpoint in ${statePath}`);
else if (saved.tree_size === result.tree_size) console.log(`unchanged since ${saved.checked_at}`);
else console.log(`grew from ${saved.tree_size} to ${result.tree_size} events, consistent (proved from ${result.tiles_fetched} tiles)`);
console.log(`ok ${result.tree_size} ${result.root_hash}`);
