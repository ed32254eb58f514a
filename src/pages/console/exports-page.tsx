import { ApiProblem, Page, type Viewer } from "./layout";
import type { ApiError } from "./console-api";
import { JobTable, type Job } from "./jobs-view";

const FIELDS = [
  ["organization", "Organization"],
  ["actor_id", "Actor id"],
  ["action", "Action (exact)"],
  ["actions", "Any of actions (comma-separated)"],
  ["actions_exclude", "Not these actions (comma-separated)"],
  ["ip_address", "IP address"],
  ["date_from", "From (ISO 8601 with zone)"],
  ["date_to", "To (ISO 8601 with zone)"],
] as const;

export function ExportsPage(props: { viewer: Viewer; jobs: Job[]; error: ApiError | null; watch: string | null }) {
  return (
    <Page title="Exports" viewer={props.viewer} active="exports" script="jobs.js">
      <h1>Exports</h1>
      <section class="card" aria-labelledby="new-export">
        <h2 id="new-export">Start an export</h2>
        <p>Runs as a job in the background and writes the export in parts; the files stay downloadable for 7 days after it ends.</p>
        <ApiProblem error={props.error} />
        <form method="post" action="/console/exports" class="filters">
          <input type="hidden" name="csrf" value={props.viewer.csrf} />
          <label>
            <span>Format</span>
            <select name="format">
              <option value="csv">CSV</option>
              <option value="json">JSON</option>
            </select>
          </label>
          <label class="check">
            <input type="checkbox" name="evidence" value="true" />
            <span>Evidence export: JSON with proofs and a signed manifest, checkable offline and in this browser</span>
          </label>
          {FIELDS.map(([name, label]) => (
            <label>
              <span>{label}</span>
              <input type="text" name={name} autocomplete="off" />
            </label>
          ))}
          <div class="actions">
            <button type="submit">Start export</button>
          </div>
        </form>
        {props.watch ? <div class="job-watch" data-job={props.watch}></div> : null}
      </section>
      <section class="card" aria-labelledby="past-exports">
        <h2 id="past-exports">Exports</h2>
        <JobTable jobs={props.jobs} empty="No export yet." columns={["Rows", "Files"]} label="Table of past exports" />
      </section>
    </Page>
  );
}
