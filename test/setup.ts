import { applyD1Migrations, env } from "cloudflare:test";

// Every database gets the same migrations; EVENTS_0 is the control database itself.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
await applyD1Migrations(env.EVENTS_1, env.TEST_MIGRATIONS);
