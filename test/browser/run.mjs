// npm run test:browser: headless Debian Chromium against a throwaway `wrangler dev`.
// Starts the worker on its own port with its own state and test secrets, creates a
// project and key, runs every test/browser/*.test.mjs with node's test runner, stops.
import { spawn, spawnSync } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyMigrations, createKey as createProjectKey } from "../../src/scripts/lib.mjs";

const ROOT = new URL("../..", import.meta.url).pathname;
const WRANGLER = join(ROOT, "node_modules", ".bin", "wrangler");
const CHROMIUM = "/usr/bin/chromium";
const PORT = Number(process.env.WITNESS_BROWSER_PORT ?? 8803);
const BASE = `http://127.0.0.1:${PORT}`;
const ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1", CI: "1" };

if (!existsSync(CHROMIUM)) {
  console.error(`${CHROMIUM} is missing: apt-get install -y chromium (Debian's package; never a downloaded browser)`);
  process.exit(1);
}

const state = mkdtempSync(join(tmpdir(), "witness-browser-"));
const secrets = {
  SIGNING_KEYS: `1:${randomBytes(24).toString("base64url")}`,
  EMBED_TOKEN_SECRET: randomBytes(32).toString("base64url"),
  STREAM_SECRETS_KEY: randomBytes(24).toString("base64url"),
  RECEIPT_SIGNING_KEYS: `test:${generateKeyPairSync("ed25519").privateKey.export({ format: "der", type: "pkcs8" }).toString("base64url")}`,
};

const createKey = (projectId) => createProjectKey(projectId, { persistTo: state }).key;

async function waitForServer(child) {
  for (let i = 0; i < 120; i++) {
    if (child.exitCode !== null) throw new Error("wrangler dev exited early");
    try {
      if ((await fetch(`${BASE}/`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error("wrangler dev did not start within 60 s");
}

let server = null;
function stop() {
  // The dev server runs in its own process group (detached): end it and its workerd.
  if (server && server.exitCode === null) {
    try {
      process.kill(-server.pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
  rmSync(state, { recursive: true, force: true });
}
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => { stop(); process.exit(130); });

let code = 1;
try {
  applyMigrations({ persistTo: state });
  const apiKey = createKey("browser");
  const demoKey = createKey("browser-demo");
  const log = [];
  server = spawn(
    WRANGLER,
    [
      "dev", "--ip", "127.0.0.1", "--port", String(PORT), "--persist-to", state, "--show-interactive-dev-session=false",
      // Private stream targets: the console test streams to a receiver on this machine.
      ...Object.entries({ ...secrets, EMBED_DEMO_PROJECT: "browser-demo", ALLOW_PRIVATE_STREAM_TARGETS: "true" }).flatMap(([k, v]) => ["--var", `${k}:${v}`]),
    ],
    { cwd: ROOT, env: ENV, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  server.stdout.on("data", (d) => log.push(String(d)));
  server.stderr.on("data", (d) => log.push(String(d)));
  try {
    await waitForServer(server);
  } catch (error) {
    console.error(log.join(""));
    throw error;
  }
  // npm run test:browser -- docs: only the files whose names contain one of the arguments.
  const only = process.argv.slice(2);
  const files = readdirSync(join(ROOT, "test", "browser"))
    .filter((f) => f.endsWith(".test.mjs") && (only.length === 0 || only.some((o) => f.includes(o))))
    .map((f) => join("test", "browser", f));
  const run = spawnSync(process.execPath, ["--test", "--test-concurrency=1", ...files], {
    cwd: ROOT,
    stdio: "inherit",
    env: {
      ...process.env,
      WITNESS_URL: BASE,
      WITNESS_API_KEY: apiKey,
      WITNESS_DEMO_API_KEY: demoKey,
      WITNESS_EMBED_TOKEN_SECRET: secrets.EMBED_TOKEN_SECRET,
      // The dev server's --persist-to directory: a test may alter a stored row there, as an attacker with database access would.
      WITNESS_STATE: state,
    },
  });
  code = run.status ?? 1;
} catch (error) {
  console.error(error);
} finally {
  stop();
}
process.exit(code);
