import { grants } from "../../auth/scopes";
import { ApiProblem, countText, Page, plural, When, type Viewer } from "./layout";
import type { ApiError } from "./console-api";

export interface Stream {
  id: string;
  type: string;
  url: string;
  status: string;
  filter: Record<string, unknown>;
  created_at: string;
  delivered_seq?: number;
  lag_events?: number;
  lag_seconds?: number;
  last_success_at?: string | null;
  last_error?: string | null;
  last_error_at?: string | null;
  next_attempt_at?: string | null;
  consecutive_failures?: number;
}

export function StreamsPage(props: { viewer: Viewer; streams: Stream[]; error: ApiError | null; created: { id: string; secret?: string } | null }) {
  const admin = grants(props.viewer.scopes, "admin");
  const csrf = <input type="hidden" name="csrf" value={props.viewer.csrf} />;
  return (
    <Page title="Streams" viewer={props.viewer} active="streams">
      <h1>Streams</h1>
      <ApiProblem error={props.error} />
      {props.created ? (
        <div class="notice" role="status">
          <p>
            Stream <code>{props.created.id}</code> created.
          </p>
          {props.created.secret ? (
            <p>
              Its webhook signing secret, shown this once: <code class="secret">{props.created.secret}</code>
            </p>
          ) : null}
        </div>
      ) : null}
      {props.streams.length === 0 ? <p class="muted">No streams: events stay in Witness only.</p> : null}
      {props.streams.map((s) => (
        <section class="card" aria-label={`Stream ${s.id}`}>
          <h2>
            {s.type} → <code>{s.url}</code>
          </h2>
          <dl class="fields">
            <dt>Status</dt>
            <dd>
              <span class={`badge ${s.status === "active" ? "ok" : s.status === "paused" ? "" : "bad"}`}>{s.status}</span>
            </dd>
            <dt>Delivered up to</dt>
            <dd>#{countText(s.delivered_seq ?? 0)}</dd>
            <dt>Lag</dt>
            <dd>
              {plural(s.lag_events ?? 0, "event")} behind, {plural(s.lag_seconds ?? 0, "second")}
            </dd>
            <dt>Last success</dt>
            <dd>
              <When at={s.last_success_at} />
            </dd>
            <dt>Last error</dt>
            <dd>
              {s.last_error ? (
                <>
                  {s.last_error} (<When at={s.last_error_at} none="time unknown" />)
                </>
              ) : (
                <em>none</em>
              )}
            </dd>
            <dt>Filter</dt>
            <dd>
              <code class="id">{JSON.stringify(s.filter)}</code>
            </dd>
          </dl>
          {admin ? (
            <div class="row-actions">
              <form method="post" action={`/console/streams/${encodeURIComponent(s.id)}/${s.status === "paused" ? "resume" : "pause"}`} class="inline">
                {csrf}
                <button type="submit">{s.status === "paused" ? "Resume delivery" : "Pause delivery"}</button>
              </form>
              <form method="post" action={`/console/streams/${encodeURIComponent(s.id)}/replay`} class="inline">
                {csrf}
                <label>
                  <span>Deliver again from seq</span>
                  <input type="number" name="from_seq" min="1" required />
                </label>
                <button type="submit">Replay</button>
              </form>
              <form method="post" action={`/console/streams/${encodeURIComponent(s.id)}/delete`} class="inline">
                {csrf}
                <button type="submit" class="danger">
                  Delete stream
                </button>
              </form>
            </div>
          ) : null}
        </section>
      ))}
      <p class="muted">
        Pause stops delivery where it stands and resume goes on from there, with nothing lost. A stream that fails keeps retrying with
        backoff; a destination that refuses for good disables it. Replay delivers again from any seq (and re-enables a disabled
        stream; a paused one stays paused), and deleting a stream stops delivery for good.
      </p>
      {admin ? (
        <section class="card" aria-labelledby="new-stream">
          <h2 id="new-stream">Create a stream</h2>
          <form method="post" action="/console/streams" class="filters">
            {csrf}
            <label>
              <span>Type</span>
              <select name="type">
                <option value="webhook">Webhook</option>
                <option value="splunk">Splunk HEC</option>
                <option value="datadog">Datadog</option>
              </select>
            </label>
            <label>
              <span>URL</span>
              <input type="url" name="url" required autocomplete="off" />
            </label>
            <label>
              <span>Token (Splunk, Datadog)</span>
              <input type="password" name="token" autocomplete="off" />
            </label>
            <label>
              <span>Only these actions (comma-separated, prefix*)</span>
              <input type="text" name="actions" autocomplete="off" />
            </label>
            <label>
              <span>Only this organization</span>
              <input type="text" name="organization" autocomplete="off" />
            </label>
            <div class="actions">
              <button type="submit">Create stream</button>
            </div>
          </form>
        </section>
      ) : (
        <p class="muted">Creating, pausing, replaying and deleting streams needs an admin key.</p>
      )}
    </Page>
  );
}
