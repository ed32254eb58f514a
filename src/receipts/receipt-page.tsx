import { raw } from "hono/html";
import type { PublicCheck, publicFields } from "./receipt";

type Fields = ReturnType<typeof publicFields>;

/** Static; the page's Content-Security-Policy admits it by nonce, and nothing else. */
const CSS = `
body{margin:0;font:16px/1.5 system-ui,sans-serif;color:#1d2330;background:#f4f5f7}
main{max-width:46rem;margin:2rem auto;padding:0 1rem}
.card{background:#fff;border:1px solid #dde1e6;border-radius:10px;padding:1.5rem}
.verdict{border-radius:8px;padding:1rem 1.25rem;margin-bottom:1.5rem;font-weight:600}
.ok{background:#e3f5e8;color:#15602b}.bad{background:#fbe5e5;color:#8a1c1c}
h1{font-size:1.25rem;margin:0 0 1rem}
dl{display:grid;grid-template-columns:10rem 1fr;gap:.5rem 1rem;margin:0}
dt{color:#5b6473}dd{margin:0;overflow-wrap:anywhere}
code{font:14px/1.4 ui-monospace,monospace}
ul{list-style:none;padding:0}footer{margin-top:1rem;font-size:14px;color:#5b6473}
`;

const LABELS: Record<keyof PublicCheck, string> = {
  hash: "Stored hash recomputes from the event's content",
  signature: "Signature is valid",
  predecessor_link: "Link to the previous event is intact",
  successor_link: "Link to the next event (or the chain head) is intact",
};

function Layout(props: { nonce: string; title: string; children: unknown }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="robots" content="noindex" />
        <title>{props.title}</title>
        <style nonce={props.nonce}>{raw(CSS)}</style>
      </head>
      <body>
        <main>{props.children}</main>
      </body>
    </html>
  );
}

function pair(value: { type: string | null; id: string | null } | null) {
  if (!value) return <em>none</em>;
  return (
    <>
      <code>{value.type ?? "?"}</code> / <code>{value.id ?? "(erased)"}</code>
    </>
  );
}

export function receiptPage(props: { nonce: string; fields: Fields; check: PublicCheck; valid: boolean; checkedAt: string; jsonUrl: string }) {
  const { fields: f, check } = props;
  const page = (
    <Layout nonce={props.nonce} title="Witness receipt">
      <div class="card">
        <h1>Witness receipt</h1>
        <p class={props.valid ? "verdict ok" : "verdict bad"}>
          {props.valid
            ? "Verified: this event is in its project's audit chain and has not been altered."
            : "Not verified: this event or its place in the chain has been altered."}
        </p>
        <dl>
          <dt>Action</dt>
          <dd>
            <code>{f.action}</code>
          </dd>
          <dt>Actor</dt>
          <dd>{pair(f.actor)}</dd>
          <dt>Target</dt>
          <dd>{pair(f.target)}</dd>
          <dt>Occurred at</dt>
          <dd>{f.occurred_at}</dd>
          <dt>Chain position</dt>
          <dd>#{f.seq}</dd>
          <dt>Hash</dt>
          <dd>
            <code>{f.hash}</code>
          </dd>
          <dt>Previous hash</dt>
          <dd>
            <code>{f.prev_hash ?? "none (first event)"}</code>
          </dd>
        </dl>
        <ul>
          {(Object.keys(LABELS) as Array<keyof PublicCheck>).map((k) => (
            <li>
              {check[k] ? "✓ " : "✗ "}
              {LABELS[k]}
            </li>
          ))}
        </ul>
        <footer>
          Checked {props.checkedAt}. <a href={props.jsonUrl}>Machine-readable check (JSON)</a>
        </footer>
      </div>
    </Layout>
  );
  return `<!doctype html>${page}`;
}

export function receiptNotFoundPage(nonce: string) {
  const page = (
    <Layout nonce={nonce} title="Receipt not found">
      <div class="card">
        <h1>Receipt not found</h1>
        <p class="verdict bad">No event with this id exists in Witness.</p>
      </div>
    </Layout>
  );
  return `<!doctype html>${page}`;
}

/** The event exists, but its archived copy is missing or damaged: it cannot be checked (410, like the JSON's ARCHIVE_DAMAGED). */
export function receiptDamagedPage(nonce: string) {
  const page = (
    <Layout nonce={nonce} title="Receipt cannot be checked">
      <div class="card">
        <h1>Receipt cannot be checked</h1>
        <p class="verdict bad">The archived copy of this event is missing or damaged, so it cannot be checked. Trying again will not help until it is restored.</p>
      </div>
    </Layout>
  );
  return `<!doctype html>${page}`;
}
