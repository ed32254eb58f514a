import { ApiProblem, Page, plural, TableBox, When, type Viewer } from "./layout";
import type { ApiError } from "./console-api";

export interface KeyInfo {
  prefix: string;
  scopes: string[];
  label: string | null;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  created_by: string | null;
}

export function KeysPage(props: { viewer: Viewer; keys: KeyInfo[]; error: ApiError | null; created: { key: string; prefix: string } | null }) {
  const csrf = <input type="hidden" name="csrf" value={props.viewer.csrf} />;
  return (
    <Page title="Keys" viewer={props.viewer} active="keys">
      <h1>API keys</h1>
      <ApiProblem error={props.error} />
      {props.created ? (
        <div class="notice" role="status">
          <p>
            Key <code>{props.created.prefix}</code> created. Copy it now: it is shown this once.
          </p>
          <p>
            <code class="secret" id="new-key">
              {props.created.key}
            </code>
          </p>
        </div>
      ) : null}
      <TableBox label="API keys" cards>
        <table class="keys">
          <caption>{`${plural(props.keys.length, "key")}, newest first (never their secrets)`}</caption>
          <thead>
            <tr>
              <th scope="col">Prefix</th>
              <th scope="col">Label</th>
              <th scope="col">Scopes</th>
              <th scope="col">Created</th>
              <th scope="col">Expires</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {props.keys.map((k) => (
              <tr>
                <td data-label="Prefix">
                  <code class="id">{k.prefix}</code>
                  {k.prefix === props.viewer.keyPrefix ? " (this session)" : ""}
                </td>
                <td data-label="Label">{k.label ?? ""}</td>
                <td data-label="Scopes">{k.scopes.join(", ")}</td>
                <td data-label="Created" class="when">
                  <When at={k.created_at} />
                </td>
                <td data-label="Expires" class="when">
                  <When at={k.expires_at} none="never" />
                </td>
                <td data-label="State">
                  {k.revoked_at ? (
                    <>
                      <span class="badge bad">revoked</span> <When at={k.revoked_at} />
                    </>
                  ) : (
                    <form method="post" action={`/console/keys/${encodeURIComponent(k.prefix)}/revoke`} class="inline">
                      {csrf}
                      <button type="submit" class="danger" aria-label={`Revoke key ${k.prefix}`}>
                        Revoke
                      </button>
                    </form>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableBox>
      <section class="card" aria-labelledby="new-key-title">
        <h2 id="new-key-title">Create a key</h2>
        <form method="post" action="/console/keys" class="stack">
          {csrf}
          <fieldset>
            <legend>Scopes</legend>
            <label class="check">
              <input type="checkbox" name="scopes" value="ingest" /> ingest: send events (for your application's servers)
            </label>
            <label class="check">
              <input type="checkbox" name="scopes" value="read" /> read: read, search, verify, export
            </label>
            <label class="check">
              <input type="checkbox" name="scopes" value="admin" /> admin: everything, keys included
            </label>
          </fieldset>
          <label for="key-label">Label</label>
          <input id="key-label" type="text" name="label" maxlength={100} autocomplete="off" />
          <label for="key-expires">Expires at (ISO 8601 with zone; empty: never)</label>
          <input id="key-expires" type="text" name="expires_at" autocomplete="off" />
          <button type="submit">Create key</button>
        </form>
      </section>
    </Page>
  );
}
