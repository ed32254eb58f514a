import { Page } from "./layout";

/** The key is posted once, exchanged for a session, and never stored in the browser. */
export function SignInPage(props: { notice: string | null; error: string | null }) {
  return (
    <Page title="Sign in">
      <div class="card narrow">
        <h1>Sign in to the console</h1>
        {props.notice ? (
          <p class="notice" role="status">
            {props.notice}
          </p>
        ) : null}
        {props.error ? (
          <p class="notice bad" role="alert" id="signin-error">
            {props.error}
          </p>
        ) : null}
        <form method="post" action="/console/sign-in">
          <label for="api-key">API key</label>
          <input
            id="api-key"
            name="api_key"
            type="password"
            required
            autocomplete="off"
            spellcheck={false}
            placeholder="wtn_live_…"
            aria-describedby={props.error ? "signin-error key-help" : "key-help"}
          />
          <p id="key-help" class="muted">
            Your project's API key. What the console shows follows the key's scopes: read for the log, admin for keys, streams and
            retention changes. You stay signed in for at most an hour.
          </p>
          <button type="submit">Sign in</button>
        </form>
        <p class="muted">
          <a href="/docs">API reference</a>
        </p>
      </div>
    </Page>
  );
}
