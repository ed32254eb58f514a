import app from "./app";
import { scheduled } from "./scheduled";

export { ProjectLedger } from "./durable/project-ledger.do";
export { RateLimiter } from "./durable/rate-limiter.do";
export { StreamDelivery } from "./durable/stream-delivery.do";

export default {
  fetch: app.fetch,
  scheduled,
} satisfies ExportedHandler<Env>;
