import { CheckItem } from "./checks";
import { Page, render } from "./layout";
import type { LogView } from "./log-view";
import { readableTime } from "./time";

/** GET /logs/<log_id> for browsers: the log's size, checkpoint, cosignatures, key and how to monitor it. */
export function logPage(view: Exclude<LogView, { kind: "unknown" }>, base: string): string {
  const url = `${base}/logs/${view.logId}`;
  if (view.kind === "unsigned") {
    return render(
      <Page title="Witness transparency log">
        <h1>Transparency log</h1>
        <p class="note">This deployment has no checkpoint signing key configured, so the log publishes no checkpoint yet.</p>
      </Page>,
    );
  }
  const command = `npm run log:monitor -- ${url} --vkey ${view.vkey}`;
  return render(
    <Page title={`Witness transparency log: ${view.size} events`}>
      <h1>Transparency log</h1>
      <p class="lead">
        The public, append-only Merkle log of one Witness project's audit events: hashes and sizes only, never an event's
        content. Anyone can check that it only ever grows, and every receipt the project issues proves its event is in it.
      </p>
      <div class="stats">
        <div class="stat">
          <b id="log-size">{view.size}</b>
          <span>events in the log</span>
        </div>
        <div class="stat">
          <b>{view.cosignatures.length}</b>
          <span>witness cosignatures</span>
        </div>
      </div>
      <section class="card" aria-labelledby="cp-h">
        <h2 id="cp-h">Newest checkpoint</h2>
        <ul class="checks">
          <CheckItem
            what="Log signature"
            state={view.signed ? "pass" : "fail"}
            result={view.signed ? "Signed with the log's key below" : "Signature does not match the log's key"}
          />
        </ul>
        <dl class="fields">
          <dt>Origin</dt>
          <dd>
            <code>{view.origin}</code>
          </dd>
          <dt>Tree size</dt>
          <dd>{view.size}</dd>
          <dt>Root hash</dt>
          <dd>
            <code>{view.rootHash}</code>
          </dd>
        </dl>
        <h3>Signed note</h3>
        <pre id="checkpoint">{view.note}</pre>
        <p class="hint">
          The same text is at <a href={`${url}/checkpoint`}>{`${url}/checkpoint`}</a>; hash tiles are under{" "}
          <code>{`${url}/tile/`}</code> (C2SP tlog-tiles).
        </p>
      </section>
      <section class="card" aria-labelledby="wit-h">
        <h2 id="wit-h">Witness cosignatures</h2>
        {view.cosignatures.length === 0 ? (
          <p>
            No independent witness has cosigned this checkpoint. A witness that cosigns promises it saw this log only grow,
            so the log cannot show one history to one reader and another to the next.
          </p>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Witness</th>
                  <th scope="col">Key ID</th>
                  <th scope="col">Cosigned</th>
                  <th scope="col">Check</th>
                </tr>
              </thead>
              <tbody>
                {view.cosignatures.map((w) => (
                  <tr>
                    <td>
                      <code>{w.name}</code>
                    </td>
                    <td>
                      <code>{w.keyId}</code>
                    </td>
                    <td>{w.at ? <time datetime={w.at}>{readableTime(w.at)}</time> : "unknown"}</td>
                    <td>{w.verified ? "✓ Matches the configured witness key" : "Not checked: not a witness this deployment names"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section class="card" aria-labelledby="mon-h">
        <h2 id="mon-h">Monitor this log</h2>
        <p>Pin the log's verifier key, then run the monitor on a schedule, from a checkout of Witness:</p>
        <pre id="monitor-command">{command}</pre>
        <p>
          It exits 0 with <code>ok &lt;size&gt; &lt;root&gt;</code> while the new checkpoint is signed by this key and extends the one it
          saved, and exits 1 with a line starting <code>FAIL</code> on a bad signature, a smaller tree or a rewritten history.
        </p>
        <h3>Verifier key</h3>
        <pre id="vkey">{view.vkey}</pre>
      </section>
    </Page>,
  );
}

export function unknownLogPage(): string {
  return render(
    <Page title="No such log" narrow>
      <h1>No such log</h1>
      <p class="verdict bad">There is no transparency log at this address.</p>
    </Page>,
  );
}
