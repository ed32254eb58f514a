import { ApiProblem, countText, Page, plural, type Viewer } from "./layout";
import type { ApiError } from "./console-api";
import { JobTable, type Job } from "./jobs-view";

export interface LogInfo {
  log_id: string;
  origin: string;
  vkey: string | null;
  public_url: string;
  tree_size: number;
  root_hash: string;
  checkpoint: string | null;
  status: string;
  built_size: number;
  head_seq: number;
}

/** Signature lines of a signed note (c2sp.org/signed-note): "— <name> <base64>", one per signer. */
export function noteSigners(note: string | null): string[] {
  if (!note) return [];
  const at = note.indexOf("\n\n");
  if (at < 0) return [];
  return note
    .slice(at + 2)
    .split("\n")
    .filter((l) => l.startsWith("\u2014 "))
    .map((l) => l.slice(2).split(" ")[0]);
}

export function IntegrityPage(props: { viewer: Viewer; log: LogInfo | null; logError: ApiError | null; verifies: Job[]; jobsError: ApiError | null; watch: string | null }) {
  const { log } = props;
  const signers = noteSigners(log?.checkpoint ?? null);
  const witnesses = log ? signers.filter((s) => s !== log.origin) : [];
  const command = log?.vkey ? `npm run log:monitor -- ${log.public_url} --vkey ${log.vkey}` : null;
  return (
    <Page title="Integrity" viewer={props.viewer} active="integrity" script="jobs.js">
      <h1>Integrity</h1>
      <section aria-labelledby="verify-title" class="card">
        <h2 id="verify-title">Verify the whole chain</h2>
        <p>
          Recomputes every event's hash and signature, follows every link and checks each event against the transparency log. Its result accounts
          for every leaf of the signed tree: checked, erased (personal data only, vouched for by an erasure record) or purged in a signed retention gap.
        </p>
        <form method="post" action="/console/integrity/verify">
          <input type="hidden" name="csrf" value={props.viewer.csrf} />
          <button type="submit">Run verify</button>
        </form>
        {props.watch ? <div class="job-watch" data-job={props.watch}></div> : null}
      </section>
      <section aria-labelledby="log-title" class="card">
        <h2 id="log-title">Transparency log</h2>
        <ApiProblem error={props.logError} />
        {log ? (
          <dl class="fields">
            <dt>Size</dt>
            <dd>
              {plural(log.tree_size, "event")} in the signed tree (chain head: #{countText(log.head_seq)}; status {log.status})
            </dd>
            <dt>Root hash</dt>
            <dd>
              <code class="hash">{log.root_hash}</code>
            </dd>
            <dt>Public address</dt>
            <dd>
              <a href={log.public_url} class="id">{log.public_url}</a>
            </dd>
            <dt>Verifier key</dt>
            <dd>
              <code class="hash">{log.vkey ?? "none (no signing key)"}</code>
            </dd>
            <dt>Witness cosignatures</dt>
            <dd>{witnesses.length > 0 ? witnesses.join(", ") : <em>none on the newest checkpoint</em>}</dd>
            <dt>Signed checkpoint</dt>
            <dd>{log.checkpoint ? <pre class="id">{log.checkpoint}</pre> : <em>none yet</em>}</dd>
          </dl>
        ) : null}
        {command ? (
          <>
            <h3>Monitor it yourself</h3>
            <p>Paste this where the repository is checked out: it checks each new checkpoint is signed and extends the last one it saw.</p>
            <pre class="command" id="monitor-command">{command}</pre>
          </>
        ) : null}
      </section>
      <section aria-labelledby="past-title" class="card">
        <h2 id="past-title">Past verifies</h2>
        <ApiProblem error={props.jobsError} />
        <JobTable jobs={props.verifies} empty="No verify has run yet." columns={["Progress", "Result"]} label="Table of past verifies" />
      </section>
    </Page>
  );
}
