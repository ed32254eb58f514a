import type { PublicCheck, publicFields } from "../../receipts/receipt";
import { CheckItem } from "./checks";
import { Page, render } from "./layout";
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
}

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
  const { fields: f, check } = props;
  const now = Date.parse(props.checkedAt);
  const erased = props.anonymizedAt !== null;
  return render(
    <Page title={`Witness receipt: ${f.action}`} narrow>
      <h1>Receipt for one audit event</h1>
      <p class={props.valid ? "verdict ok" : "verdict bad"} role="status">
        {props.valid
          ? "Verified: this event is in its project's audit chain and has not been altered."
          : "Not verified: this event or its place in the chain has been altered."}
      </p>
      {erased ? (
        <p class="note" id="erasure">
          Personal data in this event was erased on {readableTime(props.anonymizedAt!)} (<code>{props.anonymizedAt}</code>), as
          the law allows an actor to ask. The record itself stays: a commitment stored with the event stands in for the erased
          values, so the checks below still hold{check.hash ? "" : " when nothing else was changed"}.
        </p>
      ) : null}
      <section class="card" aria-labelledby="checks-h">
        <h2 id="checks-h">Checks</h2>
        <ul class="checks">
          {(Object.keys(CHECK_TEXT) as Array<keyof PublicCheck>).map((k) => {
            const text = CHECK_TEXT[k];
            return <CheckItem what={text.what} state={check[k] ? "pass" : "fail"} result={check[k] ? text.pass : text.fail} why={check[k] ? undefined : text.failWhy} />;
          })}
        </ul>
        <p class="hint">
          Checked by <strong>{props.host}</strong> on <When iso={props.checkedAt} now={now} />
        </p>
      </section>
      <section class="card" aria-labelledby="event-h">
        <h2 id="event-h">The event</h2>
        <dl class="fields">
          <dt>Action</dt>
          <dd>
            <code>{f.action}</code>
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
            <code>{f.event_id}</code>
          </dd>
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
