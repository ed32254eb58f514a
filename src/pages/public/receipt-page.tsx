import type { PublicCheck, publicFields } from "../../receipts/receipt";
import { CheckItem } from "./checks";
import { CHECK_JS_PATH, Page, render } from "./layout";
import { readableTime, relativeTime } from "./time";

type Fields = ReturnType<typeof publicFields>;

/** What each of the server's checks says, passed and failed: the result in words, never a fixed label. */
export const CHECK_TEXT: Record<keyof PublicCheck, { what: string; pass: string; fail: string; failWhy: string }> = {
  hash: {
    what: "Content",
    pass: "Content matches its hash",
    fail: "Content does not match its hash",
    failWhy: "The stored event was changed after it was recorded, or its personal data was removed without an erasure record.",
  },
  signature: {
    what: "Signature",
    pass: "Signature matches",
    fail: "Signature does not match",
    failWhy: "The signature stored with the event is not the one Witness made for this hash: the event or its signature was replaced.",
  },
  predecessor_link: {
    what: "Previous event",
    pass: "Linked to the previous event",
    fail: "Link to the previous event is broken",
    failWhy: "The event before it in the chain was changed or removed.",
  },
  successor_link: {
    what: "Next event",
    pass: "Linked to the next event, or it is the newest",
    fail: "Link to the next event is broken",
    failWhy: "The event after it in the chain was changed or removed, or the chain was cut short here.",
  },
};

export interface ReceiptPageProps {
  fields: Fields;
  check: PublicCheck;
  valid: boolean;
  checkedAt: string;
  jsonUrl: string;
  /** The host that issued and checked this receipt (the request's). */
  host: string;
  /** When the actor's personal data was erased (the row's anonymized_at), or null. */
  anonymizedAt: string | null;
  /**
   * The event's signed receipt (what GET /v1/events/:id/receipt answers), which
   * the page's script checks in the reader's browser; null when this service
   * signs no receipts (RECEIPT_SIGNING_KEYS unset).
   */
  receipt: Record<string, unknown> | null;
}

/** What the reader's browser checks (check-browser.js fills in each result), in its order. */
export const BROWSER_CHECKS = ["Receipt signature", "Checkpoint signature", "Inclusion proof", "This page"] as const;

/** The verdict's second sentence before the browser has said anything. */
export const BROWSER_NOT_RUN = "Your browser has not checked this receipt.";

function When(props: { iso: string; now: number }) {
  const ago = relativeTime(props.iso, props.now);
  return (
    <>
      <time datetime={props.iso}>{readableTime(props.iso)}</time>
      {ago ? ` (${ago === "now" ? "just now" : ago})` : ""}
      <code class="iso">{props.iso}</code>
    </>
  );
}

function pair(value: { type: string | null; id: string | null } | null, erased: boolean) {
  if (!value) return <em>none</em>;
  return (
    <>
      <code>{value.type ?? "?"}</code> / {value.id === null ? <em>{erased ? "erased" : "none"}</em> : <code>{value.id}</code>}
    </>
  );
}

export function receiptPage(props: ReceiptPageProps): string {
  const { fields: f, check, receipt } = props;
  const now = Date.parse(props.checkedAt);
  const erased = props.anonymizedAt !== null;
  return render(
    <Page title={`Witness receipt: ${f.action}`} scripts={receipt ? [CHECK_JS_PATH] : []} narrow>
      <h1>Receipt for one audit event</h1>
      {/* The one verdict: it claims only the checks that ran; check-browser.js adds the browser's once it has run them. */}
      <p id="verdict" class={props.valid ? "verdict ok" : "verdict bad"} role="status" data-server={props.valid ? "valid" : "invalid"}>
        <span id="verdict-server">
          {props.valid
            ? "Verified by the server: this event is in its project's audit chain and has not been altered."
            : "Not verified: the server found this event or its place in the chain altered."}
        </span>{" "}
        <span id="verdict-browser">{receipt ? BROWSER_NOT_RUN : "This service signs no receipts, so your browser has nothing to check."}</span>
      </p>
      {receipt ? (
        <noscript>
          <p class="note">
            JavaScript is off, so your browser has not checked this receipt: the verdict above is the server's word alone. To check it
            yourself, save the signed receipt below and run <code>npm run receipt:verify</code> on it, or paste it on{" "}
            <a href="/receipts">the check page</a> with JavaScript on.
          </p>
        </noscript>
      ) : null}
      {erased ? (
        <p class="note" id="erasure">
          Personal data in this event was erased on {readableTime(props.anonymizedAt!)} (<code>{props.anonymizedAt}</code>), as
          the law allows an actor to ask. The record itself stays: a commitment stored with the event stands in for the erased
          values, so the checks below still hold{check.hash ? "" : " when nothing else was changed"}.
        </p>
      ) : null}
      <section class="card" aria-labelledby="checks-h">
        <h2 id="checks-h">Checked by the server</h2>
        <ul class="checks">
          {(Object.keys(CHECK_TEXT) as Array<keyof PublicCheck>).map((k) => {
            const text = CHECK_TEXT[k];
            return <CheckItem what={text.what} state={check[k] ? "pass" : "fail"} result={check[k] ? text.pass : text.fail} why={check[k] ? undefined : text.failWhy} />;
          })}
        </ul>
        <p class="hint">
          Checked by <strong>{props.host}</strong> on <When iso={props.checkedAt} now={now} />
        </p>
        <p class="hint">A browser cannot repeat these: they need the stored event and the service's secret key.</p>
      </section>
      <section class="card" id="browser-check" aria-labelledby="browser-h">
        <h2 id="browser-h">Checked in your browser</h2>
        {receipt ? (
          <>
            <p class="hint">
              Your browser checks the signed receipt below with the keys this service publishes (
              <a href="/.well-known/witness-keys.json">witness-keys.json</a>), as anyone you give the receipt to can.
            </p>
            <ul class="checks" id="browser-checks">
              {BROWSER_CHECKS.map((what) => (
                <CheckItem what={what} state="skip" result="Not checked: this needs JavaScript" />
              ))}
            </ul>
            <details>
              <summary>The signed receipt (JSON)</summary>
              <pre id="signed-receipt">{JSON.stringify(receipt, null, 2)}</pre>
            </details>
          </>
        ) : (
          <p>This service has no receipt signing key, so it signs no receipt your browser could check; only the server's checks above ran.</p>
        )}
      </section>
      <section class="card" aria-labelledby="event-h">
        <h2 id="event-h">The event</h2>
        <dl class="fields">
          <dt>Action</dt>
          <dd>
            <code data-signed="action">{f.action}</code>
          </dd>
          <dt>Actor</dt>
          <dd>{pair(f.actor, erased)}</dd>
          <dt>Target</dt>
          <dd>{pair(f.target, false)}</dd>
          <dt>Occurred</dt>
          <dd>
            <When iso={f.occurred_at} now={now} />
          </dd>
          <dt>Issued by</dt>
          <dd>{props.host}</dd>
          <dt>Event id</dt>
          <dd>
            <code data-signed="event_id">{f.event_id}</code>
          </dd>
          <dt>Chain position</dt>
          <dd data-signed="seq">#{f.seq}</dd>
          <dt>Hash</dt>
          <dd>
            <code data-signed="hash">{f.hash}</code>
          </dd>
          <dt>Previous hash</dt>
          <dd>
            <code>{f.prev_hash ?? "none (first event)"}</code>
          </dd>
        </dl>
      </section>
      <p>
        <a href={props.jsonUrl}>Machine-readable check (JSON)</a> · <a href="/receipts">Check a signed receipt in your browser</a>
      </p>
    </Page>,
  );
}

export function receiptNotFoundPage(): string {
  return render(
    <Page title="Receipt not found" narrow>
      <h1>Receipt not found</h1>
      <p class="verdict bad">No event with this id exists in Witness.</p>
      <p>
        <a href="/receipts">Check a receipt you were given</a>
      </p>
    </Page>,
  );
}

/** The event exists, but its archived copy is missing or damaged: it cannot be checked (410, like the JSON's ARCHIVE_DAMAGED). */
export function receiptDamagedPage(): string {
  return render(
    <Page title="Receipt cannot be checked" narrow>
      <h1>Receipt cannot be checked</h1>
      <p class="verdict bad">
        The archived copy of this event is missing or damaged, so it cannot be checked. Trying again will not help until it is
        restored.
      </p>
    </Page>,
  );
}
