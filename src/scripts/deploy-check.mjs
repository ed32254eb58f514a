// npm run deploy:check [-- --env <name>] [--receipt-keys <file>] [--offline] [--config <file>]
// Run by npm run deploy before wrangler deploy: refuses, one line each and exit 1, what would
// deploy a broken or wrongly named service (deploy-rules.mjs). The configuration is wrangler's
// own reading of wrangler.toml (with --env or $CLOUDFLARE_ENV, as wrangler deploy reads it).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { accountProblems, configProblems, parseBucketList, parseDatabaseList, parseSecretList, receiptKeysProblems, requiredSecrets, whyNoAnswer } from "./deploy-rules.mjs";
import { ENV, parseCommand, ROOT, WRANGLER } from "./lib.mjs";

const USAGE = `usage: npm run deploy:check [-- --env <name>] [--receipt-keys <file>] [--offline] [--config <file>]
  --env <name>           the wrangler environment to check (default: $CLOUDFLARE_ENV, else the top level)
  --receipt-keys <file>  a file holding the RECEIPT_SIGNING_KEYS value to check (or set $RECEIPT_SIGNING_KEYS)
  --offline              check the configuration only; the account (buckets, databases, secrets) is not asked
  --config <file>        default: wrangler.toml
It asks the account through wrangler (npx wrangler login, or CLOUDFLARE_API_TOKEN and
CLOUDFLARE_ACCOUNT_ID), each question for at most $DEPLOY_CHECK_TIMEOUT_SECONDS (default 30) s.`;

const { flags, options } = parseCommand(process.argv.slice(2), {
  usage: USAGE,
  flags: ["--offline"],
  options: ["--env", "--receipt-keys", "--config"],
});
const configPath = resolve(options["--config"] ?? join(ROOT, "wrangler.toml"));
const env = options["--env"] ?? (process.env.CLOUDFLARE_ENV || undefined);
const seconds = Number(process.env.DEPLOY_CHECK_TIMEOUT_SECONDS) || 30;

let config;
try {
  const { unstable_readConfig } = await import("wrangler");
  config = unstable_readConfig({ config: configPath, env }, { hideWarnings: true });
} catch (error) {
  console.error(`error: cannot read ${configPath}: ${String(error.message ?? error).split("\n")[0]}`);
  process.exit(1);
}

/** One wrangler question, killed after `seconds`; { output } or { error }. */
function ask(args) {
  return new Promise((done) => {
    const child = spawn(WRANGLER, [...args, "--config", configPath, ...(env ? ["--env", env] : [])], {
      cwd: ROOT,
      env: { ...ENV, CI: process.env.CI ?? "true" }, // never a login prompt: a question answers or fails
      stdio: ["ignore", "pipe", "pipe"],
      detached: true, // its own process group, so the timeout ends wrangler and whatever it started
    });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
      done({ error: whyNoAnswer("", { timedOut: true, seconds }) });
    }, seconds * 1000);
    child.on("error", (error) => {
      clearTimeout(timer);
      done({ error: String(error.message) });
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      done(code === 0 ? { output } : { output, error: whyNoAnswer(output) });
    });
  });
}

function answer(reply, parse) {
  if (reply.error && !(parse === parseSecretList && /\b10007\b/.test(reply.output ?? ""))) return { error: reply.error };
  try {
    return parse(reply.output);
  } catch {
    return { error: `wrangler's answer was not what deploy:check reads: ${whyNoAnswer(reply.output)}` };
  }
}

const problems = configProblems(config);
const keysValue = options["--receipt-keys"] ? readFileSync(options["--receipt-keys"], "utf8") : process.env.RECEIPT_SIGNING_KEYS;
if (keysValue !== undefined) problems.push(...receiptKeysProblems(keysValue));

if (!flags.has("--offline")) {
  const jurisdictions = [...new Set((config.r2_buckets ?? []).map((b) => b.jurisdiction ?? ""))];
  const [databases, secrets, ...bucketReplies] = await Promise.all([
    ask(["d1", "list", "--json"]),
    ask(["secret", "list", "--format", "json"]),
    ...jurisdictions.map((j) => ask(["r2", "bucket", "list", ...(j ? ["-J", j] : [])])),
  ]);
  const lists = bucketReplies.map((r) => answer(r, parseBucketList));
  const buckets = lists.find((l) => l.error) ?? { names: new Set(lists.flatMap((l) => [...l.names])) };
  problems.push(...accountProblems(config, { buckets, databases: answer(databases, parseDatabaseList), secrets: answer(secrets, parseSecretList) }));
}

const target = `${config.name}${env ? ` (env ${env})` : ""}`;
if (problems.length > 0) {
  for (const p of problems) console.error(`deploy:check: ${p}`);
  console.error(`deploy:check: ${problems.length} problem${problems.length === 1 ? "" : "s"}; ${target} was not deployed`);
  process.exit(1);
}
const skipped = [
  ...(flags.has("--offline") ? ["the account (--offline)"] : []),
  ...(keysValue === undefined ? ["the RECEIPT_SIGNING_KEYS value (pass --receipt-keys <file>)"] : []),
];
console.log(
  `deploy:check: ${target} is ready: LOG_ORIGIN_HOST ${config.vars.LOG_ORIGIN_HOST}, ${(config.d1_databases ?? []).length} D1 bindings, ` +
    `${(config.r2_buckets ?? []).length} R2 buckets, secrets ${requiredSecrets(config).join(", ") || "(none required)"}` +
    (skipped.length > 0 ? `; not checked: ${skipped.join(", ")}` : ""),
);
