export interface Job {
  id: string;
  type: "export" | "verify";
  status: string;
  progress: { done: number; total: number };
  created_at: string;
  updated_at: string;
  result?: any;
  error?: { code: string; message: string };
  files?: { name: string; bytes: number; rows: number }[];
  files_expired?: boolean;
}

/** A verify's outcome in words. */
export function verifyOutcome(job: Job): string {
  if (job.status !== "succeeded") return job.error ? `${job.error.code}: ${job.error.message}` : "";
  const r = job.result ?? {};
  if (r.ok) return `Intact: ${r.verified} events checked`;
  const f = r.failure ?? {};
  return `Failed: ${f.reason ?? "chain broken"}${f.event_id ? ` at event ${f.event_id}` : ""}`;
}

export function JobRow(props: { job: Job }) {
  const j = props.job;
  const failed = j.status === "failed" || (j.type === "verify" && j.status === "succeeded" && !j.result?.ok);
  return (
    <tr>
      <td>
        <time datetime={j.created_at}>{j.created_at.replace("T", " ").replace("Z", "")}</time>
      </td>
      <td>
        <span class={`badge ${failed ? "bad" : j.status === "succeeded" ? "ok" : ""}`}>{j.status}</span>
      </td>
      <td class="num">
        {j.progress.done} / {j.progress.total}
      </td>
      <td>
        {j.type === "verify" ? (
          verifyOutcome(j)
        ) : j.status === "succeeded" && j.files && !j.files_expired ? (
          <>
            <ul class="plain">
              {j.files.map((f) => (
                <li>
                  <a href={`/console/api/v1/jobs/${encodeURIComponent(j.id)}/files/${encodeURIComponent(f.name)}`} download={f.name}>
                    {f.name}
                  </a>{" "}
                  ({f.rows} rows, {f.bytes} bytes)
                </li>
              ))}
            </ul>
            {j.files.some((f) => f.name === "manifest.json") ? (
              <div class="evidence">
                <button type="button" class="evidence-check" data-job={j.id}>
                  Check in this browser
                </button>
                <p class="evidence-result" role="status" aria-live="polite"></p>
              </div>
            ) : null}
          </>
        ) : j.files_expired ? (
          "Files expired"
        ) : (
          (j.error && `${j.error.code}: ${j.error.message}`) || ""
        )}
      </td>
    </tr>
  );
}

/** Past jobs, newest first: the exports page and the integrity page list theirs alike. */
export function JobTable(props: { jobs: Job[]; empty: string; columns: [string, string] }) {
  if (props.jobs.length === 0) return <p class="muted">{props.empty}</p>;
  return (
    <div class="table-wrap">
      <table>
        <caption>Newest first</caption>
        <thead>
          <tr>
            <th scope="col">Started</th>
            <th scope="col">Status</th>
            <th scope="col">{props.columns[0]}</th>
            <th scope="col">{props.columns[1]}</th>
          </tr>
        </thead>
        <tbody>
          {props.jobs.map((j) => (
            <JobRow job={j} />
          ))}
        </tbody>
      </table>
    </div>
  );
}
