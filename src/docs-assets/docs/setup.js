// Loaded before scalar.js on /docs. The reference bundles zod, which probes for
// eval with Function("") unless told not to; the page's CSP forbids eval, so the
// probe would be reported as a violation. Jitless zod never tries.
globalThis.__zod_globalConfig = { ...globalThis.__zod_globalConfig, jitless: true };
