import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admitJob } from "../../src/jobs/job-store";
import { createProject } from "../helpers";

/**
 * The cap on a project's live jobs is checked in the statement that inserts
 * the job, so no interleaving of concurrent creations passes it. No Workflow
 * instance is started here: the jobs stay queued whatever the machine's speed.
 */
describe("admitting jobs", () => {
  it("admits exactly the cap out of many concurrent creations, and a verify of the same range joins the live one", async () => {
    const p = await createProject();
    const creator = { key: "k_test", scope: "read" } as const;
    const tries = Array.from({ length: 12 }, (_, i) => admitJob(env, p.id, crypto.randomUUID(), "export", { format: "csv", i }, creator, 3));
    const results = await Promise.all(tries);
    expect(results.filter((r) => r.job && !r.joined)).toHaveLength(3);
    expect(results.filter((r) => r.job === null).map((r) => r.running)).toEqual(Array(9).fill(3));
    const { n } = (await p.db.prepare("SELECT count(*) AS n FROM jobs WHERE project_id = ?").bind(p.id).first<{ n: number }>())!;
    expect(n).toBe(3);

    const other = await createProject();
    const params = { window: { from: null, to: null }, since: null };
    const same = await Promise.all(Array.from({ length: 6 }, () => admitJob(env, other.id, crypto.randomUUID(), "verify", params, creator, 3)));
    expect(new Set(same.map((r) => r.job!.id)).size).toBe(1);
    expect(same.filter((r) => !r.joined)).toHaveLength(1);
  });
});
