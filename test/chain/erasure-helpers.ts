import { expect } from "vitest";
import { call, type CallOptions } from "../helpers";
import { waitForJob } from "../jobs/job-helpers";

/**
 * DELETE /v1/actors/...: the erasure is accepted at once (202), then applied
 * by its job; this waits for the job. `anonymized` is the job's count; the
 * answer stays as the client got it. A refused erasure (4xx) comes back as is.
 */
export async function eraseApplied(key: string, path: string, options: Omit<CallOptions, "key"> = {}) {
  const res = await call("DELETE", path, { ...options, key });
  if (res.status !== 202) return { ...res, job: null, anonymized: null as number | null };
  expect(res.json.data).toMatchObject({ status: "applying", job_id: expect.any(String), erasure_id: expect.any(Number) });
  const job = await waitForJob(key, res.json.data.job_id, [], 120_000);
  expect(job.status).toBe("succeeded");
  return { ...res, job, anonymized: job.result.anonymized as number | null };
}

/** The answer DELETE /v1/actors/:id gives, without its ids (which differ each time). */
export const accepted = (data: { actor_id: string; by: "id" | "email"; organization: string | null }) => ({ ...data, status: "applying" });
