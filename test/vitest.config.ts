import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig(async () => ({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          TEST_MIGRATIONS: await readD1Migrations("./migrations"),
          // Fixed test secrets; real ones come from .dev.vars or `wrangler secret put`.
          SIGNING_KEYS: "1:test-signing-key-version-one",
          EMBED_TOKEN_SECRET: "test-embed-token-secret-0123456789abcdef",
          // Two receipt keys, as after a rotation: test-2 signs, both are published.
          RECEIPT_SIGNING_KEYS:
            "test-1:MC4CAQAwBQYDK2VwBCIEIGHefepuyS5KQInooVHePmKmN9op8r20BdH5omtcDWjz," +
            "test-2:MC4CAQAwBQYDK2VwBCIEIMEc7uxzTEK5bUGXhVUWxM52v67sbzLCrKD4KuWC803P",
        },
      },
    }),
  ],
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["./test/setup.ts"],
  },
}));
