import { DurableObject } from "cloudflare:workers";
import { exportPart, type ExportPartResult, type ExportPartState } from "../reads/export-part";

/**
 * One part of a GET /v1/exports download (src/reads/export-part.ts), in its
 * own invocation with its own budget of D1 queries and subrequests. A fresh
 * object per call; it stores nothing.
 */
export class ExportPart extends DurableObject<Env> {
  run(state: ExportPartState): Promise<ExportPartResult> {
    return exportPart(this.env, state);
  }
}
