import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { defineConfig } from "vitest/config";

// Quiet runs: wrangler's config notes ("Using secrets defined in ...", the required-secrets
// warning: tests bind their own below) are not test output. WRANGLER_LOG=log shows them again.
process.env.WRANGLER_LOG ??= "error";
// WITNESS_TEST_VERBOSE=1 also prints the runtime's own log: every exception a Durable Object
// method throws back to its caller (the tests that inject D1 failures do so on purpose) and
// every request body a refusing worker leaves unread.
const verbose = process.env.WITNESS_TEST_VERBOSE === "1";

const testFiles = readdirSync("test", { recursive: true, encoding: "utf8" })
  .filter((f) => f.endsWith(".test.ts"))
  .map((f) => ({ path: join("test", f), text: readFileSync(join("test", f), "utf8") }));
/** Test files that use no binding: they import nothing from cloudflare:* and none of the test helpers. */
const pureFiles = testFiles.filter((f) => !/cloudflare:|helpers|SELF/.test(f.text)).map((f) => f.path);

/**
 * Files that steer what the whole runtime does, or read what it did: a test-only policy (stream and alert
 * transport, through the fake network of test/streams/receiver.ts; e-mail; the rollup backfill), the meter's
 * worst-invocation report (src/lib/meter.ts keeps one per runtime; these files empty it before they read it),
 * the crons over every project, the shard's periods (model/periods.ts: every read of a shard reads each period
 * it holds; a file makes them and drops them before it ends). They must not share a runtime with files running beside them, whose streams
 * would go through their policy, whose invocations would land in their report, and whose projects their crons
 * would sweep while those files' own tests run. So they share runtimes among themselves only (runtimeWideFiles),
 * where one file runs after another: each sets its policy and empties the report itself, and a cron's checks
 * are of its own file's projects.
 */
const RUNTIME_WIDE = /setStreamPolicy|setEmailPolicy|\/receiver"|backfillPolicy|meterReport|\/__meter|scheduled!?\(createScheduledController|makePeriod\(/;
const bindingFiles = testFiles.filter((f) => !pureFiles.includes(f.path));
/**
 * Files that measure everything the runtime holds or did: the meter's totals of rows written, a whole shard.
 * Another file's projects, or its work still finishing in the background (a ledger's alarm writes its activity
 * counts), would change what they measure, even one file earlier: these keep a fresh runtime each.
 */
const ownRuntimeFiles = [
  ...bindingFiles.filter((f) => /meterTotals/.test(f.text)).map((f) => f.path),
  // A shard's size and which project it archives first.
  "test/storage/shard-pressure.test.ts",
  "test/storage/shard-move.test.ts",
  // It keys projects' rows (row_id = n x 2^40 + seq) in a shard that no writer yet keeps below them.
  "test/model/row-keys.test.ts",
];
const runtimeWideFiles = bindingFiles.filter((f) => !ownRuntimeFiles.includes(f.path) && RUNTIME_WIDE.test(f.text)).map((f) => f.path);

export default defineConfig(async () => ({
  plugins: [
    cloudflareTest({
      verbose,
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          TEST_MIGRATIONS: await readD1Migrations("./migrations"),
          // Every request, Durable Object call, alarm and cron run fails past Cloudflare's per-invocation limits (src/lib/meter.ts).
          METER: "enforce",
          // A commit answered after D1 however slow the test machine's D1 is: a project answers ahead of its shard
          // only where a test sets the bound itself (test/chain/commit-backlog.test.ts), so the others' reads of D1
          // straight after an answer stay exact on a loaded machine.
          INGEST_LAG_MS: "60000",
          // No cron makes a period: tests that read or write periods make their own (test/model/periods.test.ts), and
          // the others' rows stay where their own reads and tampering look for them.
          PERIODS: "off",
          // Fixed test secrets; real ones come from .dev.vars or `wrangler secret put`.
          SIGNING_KEYS: "1:test-signing-key-version-one",
          EMBED_TOKEN_SECRET: "test-embed-token-secret-0123456789abcdef",
          STREAM_SECRETS_KEY: "test-stream-secrets-key-0123456789abcdef",
          // Two receipt keys, as after a rotation: test-2 signs, both are published.
          RECEIPT_SIGNING_KEYS:
            "test-1:MC4CAQAwBQYDK2VwBCIEIGHefepuyS5KQInooVHePmKmN9op8r20BdH5omtcDWjz," +
            "test-2:MC4CAQAwBQYDK2VwBCIEIMEc7uxzTEK5bUGXhVUWxM52v67sbzLCrKD4KuWC803P",
        },
      },
    }),
  ],
  test: {
    // Four projects. Each of a project's workers (maxWorkers below) is one runtime, with its own storage,
    // that runs one file after another. A file that never touches a binding (no cloudflare:* import, no
    // test helpers) runs without the setup: importing cloudflare:test and migrating the databases cost each
    // file ~3-5 s here, a third of the suite's time, for the ~30 files that are pure logic. The files that
    // touch bindings share their worker's module graph and storage (isolate: false): loading the worker's
    // modules again for every file was another 5-7 s a file (the suite: 256 s -> about 125 s). Each test
    // makes its own project, so sharing storage is what production does. The files that steer or sweep the
    // whole runtime (runtimeWideFiles) share runtimes among themselves only, one file after another, never
    // beside the others' traffic (29 files: a runtime each took 7 s of start-up, 200 s of the suite's lanes).
    // The files that measure all it holds (ownRuntimeFiles) keep one each. The pure files share one runtime
    // too: a runtime each cost them ~1 s a file of start-up for ~0.05 s of tests (28 files: 31.6 s -> 8.7 s).
    projects: [
      { extends: true as const, test: { name: "pure", include: pureFiles, isolate: false } },
      { extends: true as const, test: { name: "workers", include: ["test/**/*.test.ts"], exclude: [...pureFiles, ...runtimeWideFiles, ...ownRuntimeFiles], setupFiles: ["./test/setup.ts"], isolate: false } },
      { extends: true as const, test: { name: "runtime-wide", include: runtimeWideFiles, setupFiles: ["./test/setup.ts"], isolate: false } },
      { extends: true as const, test: { name: "own-runtime", include: ownRuntimeFiles, setupFiles: ["./test/setup.ts"] } },
    ],
    // Node side: an S3-compatible server (s3rver behind a SigV4 check) for the s3 stream tests, by inject("s3").
    globalSetup: ["./test/streams/s3-server.mjs"],
    // Three test files at once: each spends most of its time waiting on workerd's storage. On this
    // 2-core machine 12 files took 42 s with one worker and 23 s with four; the suite 192 s with three.
    maxWorkers: 3,
    // With three files sharing two cores, a test that takes 4 s alone can take 8, and on a machine
    // busy with other work (a second suite, a build) several times that. Tests wait on conditions,
    // never on time, so a generous limit fails a test for its behaviour, never for the machine's load.
    testTimeout: 120_000,
    // Console output (the 500s the failure tests provoke are logged) only for failing tests.
    silent: verbose ? false : ("passed-only" as const),
  },
}));
