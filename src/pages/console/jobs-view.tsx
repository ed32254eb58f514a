import { countText, plural, TableBox, When } from "./layout";

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

/** Where each leaf of the signed tree went in a verify (GET /v1/events/verify's counts, src/schemas/responses.ts). */
export interface VerifyTally {
  /** Signed rows whose hash, signature, chain link and log leaf checked out. */
  checked: number;
  /** Rows from before the project's signing began: hash, link and leaf checked, no signature to check. */
  unsigned: number;
  /** Rows whose personal data was erased, vouched for by the ledger's erasure record. */
  erased: number;
  /** Events purged by the retention plan, in signed gap records. */
  purged: number;
  gaps: number;
  /** Everything above: the rows (and gaps) the verify walked. */
  walked: number;
  /** The signed tree the rows were checked against. */
  treeSize: number;
}

export function verifyTally(r: any): VerifyTally {
  const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  const gaps: any[] = Array.isArray(r?.gaps) ? r.gaps : [];
  const checked = n(r?.verified);
  const unsigned = n(r?.unsigned);
  const erased = n(r?.anonymized);
  // An incremental verify lists only the gaps crossed since its checkpoint; the earlier ones come as one count.
  const purged = gaps.reduce((sum, g) => sum + n(g?.purged_count), 0) + n(r?.purged_before_checkpoint);
  return { checked, unsigned, erased, purged, gaps: gaps.length, walked: checked + unsigned + erased + purged, treeSize: n(r?.checkpoint?.tree_size) };
}

/** A verify's outcome in one line: the verdict and whether its counts cover the whole signed tree. */
export function verifyOutcome(job: Job): string {
  if (job.status !== "succeeded") return job.error ? `${job.error.code}: ${job.error.message}` : "";
  const r = job.result ?? {};
  const t = verifyTally(r);
  if (r.ok) {
    return t.walked === t.treeSize
      ? `Intact: all ${plural(t.treeSize, "event")} in the signed tree accounted for`
      : `Intact: ${plural(t.walked, "event")} accounted for, against a signed tree of ${plural(t.treeSize, "event")}`;
  }
  const f = r.failure ?? {};
  return `Failed: ${f.reason ?? "chain broken"}${f.event_id ? ` at event ${f.event_id}` : ""}`;
}

/**
 * Every leaf of the signed tree accounted for: checked, erased, purged in a
 * retention gap (and unsigned, when there are any), adding up to the tree's
 * size; where they do not, the difference is named and why it can arise.
 */
export function VerifyTallyList(props: { result: any }) {
  const r = props.result ?? {};
  const t = verifyTally(r);
  const diff = t.treeSize - t.walked;
  return (
    <ul class="tally">
      <li>{`${countText(t.checked)} checked: hash, signature, chain link and log leaf`}</li>
      {t.unsigned > 0 ? <li>{`+ ${countText(t.unsigned)} unsigned (recorded before signing began): hash, chain link and log leaf`}</li> : null}
      <li>{`+ ${countText(t.erased)} with personal data erased: checked against the ledger's erasure record`}</li>
      <li>{`+ ${countText(t.purged)} in retention gaps${t.gaps > 0 ? ` (${plural(t.gaps, "signed gap record")})` : ""}: purged under the retention plan`}</li>
      <li class="sum">
        {diff === 0
          ? `= ${plural(t.treeSize, "event")} in the signed tree`
          : `= ${plural(t.walked, "event")} ${r.ok ? "walked" : "walked before it stopped"}, of ${plural(t.treeSize, "event")} in the signed tree`}
      </li>
      {diff !== 0 ? (
        <li class="note">
          {!r.ok
            ? "It stopped at the failure: the events after it were not checked."
            : diff < 0
              ? `${plural(-diff, "event")} recorded after that tree was signed: checked against the chain; the next verify checks their log leaves.`
              : `${plural(diff, "event")} not walked: recorded after the verify began, or in retention gaps an earlier verify counted (an incremental verify lists only new gaps), or outside a verify's time window.`}
        </li>
      ) : null}
    </ul>
  );
}

const bytesText = (n: number) => (n < 1000 ? plural(n, "byte") : n < 1_000_000 ? `${(n / 1000).toFixed(1)} kB` : `${(n / 1_000_000).toFixed(1)} MB`);

export function JobRow(props: { job: Job; columns: [string, string] }) {
  const j = props.job;
  const failed = j.status === "failed" || (j.type === "verify" && j.status === "succeeded" && !j.result?.ok);
  const unit = j.type === "verify" ? ["chunk", "chunks"] : ["row", "rows"];
  return (
    <tr id={`job-${j.id}`}>
      <td class="when" data-label="Started">
        <When at={j.created_at} />
      </td>
      <td data-label="Status">
        <span class={`badge ${failed ? "bad" : j.status === "succeeded" ? "ok" : ""}`}>{j.status}</span>
      </td>
      <td class="num" data-label={props.columns[0]}>
        {`${countText(j.progress.done)} of ${plural(j.progress.total, unit[0], unit[1])}`}
      </td>
      <td data-label={props.columns[1]}>
        {j.type === "verify" ? (
          <>
            {verifyOutcome(j)}
            {j.status === "succeeded" ? <VerifyTallyList result={j.result} /> : null}
          </>
        ) : j.status === "succeeded" && j.files && !j.files_expired ? (
          <>
            <ul class="plain">
              {j.files.map((f) => (
                <li>
                  <a href={`/console/api/v1/jobs/${encodeURIComponent(j.id)}/files/${encodeURIComponent(f.name)}`} download={f.name} class="id">
                    {f.name}
                  </a>{" "}
                  <span class="muted">
                    ({plural(f.rows, "row")}, {bytesText(f.bytes)})
                  </span>
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
export function JobTable(props: { jobs: Job[]; empty: string; columns: [string, string]; label: string }) {
  if (props.jobs.length === 0) return <p class="muted">{props.empty}</p>;
  return (
    <TableBox label={props.label} cards>
      <table class="jobs">
        <caption>{`${plural(props.jobs.length, "job")}, newest first`}</caption>
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
            <JobRow job={j} columns={props.columns} />
          ))}
        </tbody>
      </table>
    </TableBox>
  );
}
