// npm run deploy:check [-- --env <name>] [--receipt-keys <file>] [--offline] [--config <file>]
// Run by npm run deploy before wrangler deploy: refuses, one line each and exit 1, what would
// deploy a broken or wrongly named service (deploy-rules.mjs). The configuration is wrangler's
// own reading of wrangler.toml (with --env or $CLOUDFLARE_ENV, as wrangler deploy reads it),
// against the Env the Worker's code is typed with (src/worker-configuration.d.ts, written by
// npm run types). Its last line always says which: ready, or what failed.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import {
  accountProblems, bindingProblems, configErrorLines, configProblems, envMembersOf, parseBucketList, parseDatabaseList,
  parseSecretList, receiptKeysProblems, requiredSecrets, whyNoAnswer,
} from "./deploy-rules.mjs";
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

const shown = relative(process.cwd(), configPath).startsWith("..") ? configPath : relative(process.cwd(), configPath);
const TYPES = join(ROOT, "src", "worker-configuration.d.ts");

/** Refuses with one line per problem, then the one line that says the deploy is off; exit 1. */
function refuse(problems, what) {
  for (const p of problems) console.error(`deploy:check: ${p}`);
  console.error(`deploy:check: FAILED, ${problems.length} problem${problems.length === 1 ? "" : "s"}: ${what}`);
  process.exit(1);
}

// Whatever else goes wrong is still one line and the verdict, never a stack trace.
process.on("uncaughtException", (error) => refuse([`deploy:check could not finish: ${String(error?.message ?? error).split("\n")[0]}`], "nothing was deployed"));
if (!existsSync(configPath)) refuse([`${shown} does not exist`], "nothing was checked or deployed");
let config;
try {
  const { unstable_readConfig } = await import("wrangler");
  config = unstable_readConfig({ config: configPath, env }, { hideWarnings: true });
} catch (error) {
  let text;
  try {
    text = readFileSync(configPath, "utf8");
  } catch {}
  refuse(configErrorLines(error, { file: shown, text }), `${shown} could not be read; nothing was checked or deployed`);
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
let defaults = [];
try {
  const bindings = bindingProblems(config, envMembersOf(readFileSync(TYPES, "utf8")), { env });
  problems.push(...bindings.problems);
  defaults = bindings.defaults;
} catch (error) {
  problems.push(`cannot read the Worker's bindings from ${relative(ROOT, TYPES)}: ${error.code === "ENOENT" ? "it does not exist: run npm run types" : error.message}`);
}
let keysValue = process.env.RECEIPT_SIGNING_KEYS;
if (options["--receipt-keys"]) {
  try {
    keysValue = readFileSync(options["--receipt-keys"], "utf8");
  } catch (error) {
    problems.push(`cannot read --receipt-keys ${options["--receipt-keys"]}: ${error.code === "ENOENT" ? "no such file" : error.message}`);
  }
}
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
if (problems.length > 0) refuse(problems, `${target} was not deployed`);
const skipped = [
  ...(flags.has("--offline") ? ["the account (--offline)"] : []),
  ...(keysValue === undefined ? ["the RECEIPT_SIGNING_KEYS value (pass --receipt-keys <file>)"] : []),
];
console.log(
  `deploy:check: OK, ${target} is ready: LOG_ORIGIN_HOST ${config.vars.LOG_ORIGIN_HOST}, every binding the Worker declares, ${(config.d1_databases ?? []).length} D1 bindings, ` +
    `${(config.r2_buckets ?? []).length} R2 buckets, secrets ${requiredSecrets(config).join(", ") || "(none required)"}` +
    (defaults.length > 0 ? `; defaults for ${defaults.join(", ")} (not in [vars])` : "") +
    (skipped.length > 0 ? `; not checked: ${skipped.join(", ")}` : ""),
);
