import { Page, render } from "./layout";

/** GET / for browsers: what Witness is and where to go. Static: nothing on it comes from a request. */
export function landingPage(): string {
  return render(
    <Page title="Witness: a tamper-evident audit log">
      <h1>Witness: an audit log you can prove was never edited</h1>
      <p class="lead">
        Your application records who did what; Witness keeps it as a tamper-evident audit log. Every event is hashed into a
        chain and signed when it arrives, each project publishes a public Merkle log of those hashes, and every event can
        get a signed receipt that anyone can check, without an account and without trusting this server.
      </p>
      <div class="cards">
        <section class="card" aria-labelledby="console-h">
          <h2 id="console-h">Console</h2>
          <p>Sign in with a project's API key to read and search its events, run an integrity check and export the history.</p>
          <p>
            <a class="button" href="/console">
              Open the console
            </a>
          </p>
        </section>
        <section class="card" aria-labelledby="docs-h">
          <h2 id="docs-h">API reference</h2>
          <p>Record events from your servers, read them back, verify the chain, hand out receipts and stream everything out.</p>
          <p>
            <a class="button secondary" href="/docs">
              Read the API reference
            </a>
          </p>
        </section>
        <section class="card" aria-labelledby="check-h">
          <h2 id="check-h">Check a receipt</h2>
          <p>Were you given a Witness receipt? Paste it to check its signature and log proof here, in your own browser.</p>
          <p>
            <a class="button secondary" href="/receipts">
              Check a receipt
            </a>
          </p>
        </section>
      </div>
      <h2>How the evidence holds</h2>
      <dl class="fields">
        <dt>Chained</dt>
        <dd>Each event's hash covers the one before it, so removing, reordering or editing an event breaks every link after it.</dd>
        <dt>Signed</dt>
        <dd>Every event is signed as it is stored; a database writer without the key cannot forge one.</dd>
        <dt>Published</dt>
        <dd>
          Each project has a public transparency log (C2SP tlog-tiles) whose signed checkpoints anyone can monitor and
          independent witnesses can cosign: the history cannot be rewritten for one reader and not another.
        </dd>
        <dt>Receipts</dt>
        <dd>A signed receipt proves one event's content and place in the log, and can be checked offline with the published keys.</dd>
      </dl>
      <p class="hint">
        Personal data stays private: the public log holds hashes only, and an actor's personal data can be lawfully erased
        without breaking the chain.
      </p>
    </Page>,
  );
}
