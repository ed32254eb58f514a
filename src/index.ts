import app from "./app";
import { ExportPart as Part } from "./durable/export-part.do";
import { ProjectLedger as Ledger } from "./durable/project-ledger.do";
import { RateLimiter as Limiter } from "./durable/rate-limiter.do";
import { StreamDelivery as Delivery } from "./durable/stream-delivery.do";
import { AlertEvaluator as Evaluator } from "./durable/alert-evaluator.do";
import { VerifyChunk as Chunk } from "./durable/verify-chunk.do";
import { JobWorkflow } from "./durable/job-workflow";
import { meteredHandlers, meteredObject } from "./lib/metered-entry";
import { scheduled } from "./scheduled";

// Each a metered invocation where METER = "enforce" (tests, benches); untouched otherwise (src/lib/meter.ts).
export const ProjectLedger = meteredObject(Ledger);
export const RateLimiter = meteredObject(Limiter);
export const StreamDelivery = meteredObject(Delivery);
export const VerifyChunk = meteredObject(Chunk);
export const ExportPart = meteredObject(Part);
export const AlertEvaluator = meteredObject(Evaluator);
// The bindings' types (worker-configuration.d.ts) name these exports as types.
export type ProjectLedger = Ledger;
export type RateLimiter = Limiter;
export type StreamDelivery = Delivery;
export type VerifyChunk = Chunk;
export type ExportPart = Part;
export type AlertEvaluator = Evaluator;
// A Workflow: each of its steps meters itself (src/durable/job-workflow.ts).
export { JobWorkflow };

export default meteredHandlers<Env>({ fetch: app.fetch, scheduled }) satisfies ExportedHandler<Env>;
