import type { Child } from "hono/jsx";
import { Page, type Viewer } from "./layout";

type Json = Record<string, any>;

function Row(props: { name: string; children: Child }) {
  return (
    <>
      <dt>{props.name}</dt>
      <dd>{props.children}</dd>
    </>
  );
}

const orNone = (v: unknown) => (v === null || v === undefined || v === "" ? <em>none</em> : <code>{String(v)}</code>);

/**
 * One event: every field as text (JSX escapes all of it), its place in the
 * chain, its receipt, and a panel the page's script fills with the check of
 * the inclusion proof it runs in this browser.
 */
export function EventPage(props: { viewer: Viewer; event: Json }) {
  const e = props.event;
  const actor = e.actor as Json | null;
  return (
    <Page title={`Event ${e.seq}`} viewer={props.viewer} active="events" script="event.js">
      <p>
        <a href="/console/events">← All events</a>
      </p>
      <h1>
        <code>{e.action}</code>
      </h1>
      <section
        id="proof"
        class="proof pending"
        aria-labelledby="proof-title"
        data-event-id={e.id}
        data-seq={String(e.seq)}
        data-hash={e.hash}
      >
        <h2 id="proof-title">Integrity, checked in this browser</h2>
        <p id="proof-verdict" role="status" aria-live="polite">
          Checking the receipt and its inclusion proof in this browser…
        </p>
        <ul id="proof-steps"></ul>
      </section>
      <div class="grid2">
        <section aria-labelledby="fields-title">
          <h2 id="fields-title">Fields</h2>
          <dl class="fields">
            <Row name="Id">{orNone(e.id)}</Row>
            <Row name="Action">{orNone(e.action)}</Row>
            <Row name="Occurred at">{orNone(e.occurred_at)}</Row>
            <Row name="Organization">{orNone(e.organization)}</Row>
            <Row name="Actor">
              {actor ? (
                <>
                  {orNone(actor.type)} / {orNone(actor.id)}
                  {actor.name ? <> · {actor.name}</> : null}
                  {actor.email ? <> · {actor.email}</> : null}
                </>
              ) : (
                <em>none</em>
              )}
            </Row>
            <Row name="Targets">
              {Array.isArray(e.targets) && e.targets.length > 0 ? (
                <ul class="plain">
                  {e.targets.map((t: Json) => (
                    <li>
                      {orNone(t.type)} / {orNone(t.id)}
                      {t.name ? <> · {t.name}</> : null}
                    </li>
                  ))}
                </ul>
              ) : (
                <em>none</em>
              )}
            </Row>
            <Row name="IP address">{orNone(e.ip_address)}</Row>
            <Row name="User agent">{orNone(e.user_agent)}</Row>
            <Row name="Personal data erased">{orNone(e.anonymized_at)}</Row>
            <Row name="Metadata">{e.metadata ? <pre>{JSON.stringify(e.metadata, null, 2)}</pre> : <em>none</em>}</Row>
          </dl>
        </section>
        <section aria-labelledby="chain-title">
          <h2 id="chain-title">Place in the chain</h2>
          <dl class="fields">
            <Row name="Seq">#{String(e.seq)}</Row>
            <Row name="Previous hash">{e.prev_hash ? <code>{e.prev_hash}</code> : <em>none (first event)</em>}</Row>
            <Row name="Hash">{orNone(e.hash)}</Row>
            <Row name="Signature">{orNone(e.signature)}</Row>
            <Row name="PII commitment">{orNone(e.pii_commitment)}</Row>
          </dl>
          <h2>Receipt</h2>
          <ul class="plain">
            <li>
              <a href={`/receipts/${encodeURIComponent(e.id)}`}>Public receipt page</a> (anyone with the link can check it)
            </li>
            <li>
              <a href={`/console/api/v1/events/${encodeURIComponent(e.id)}/receipt`}>Signed receipt (JSON)</a>, checkable offline with{" "}
              <code>npm run receipt:verify</code>
            </li>
          </ul>
        </section>
      </div>
    </Page>
  );
}

export function NotFoundPage(props: { viewer?: Viewer; what: string }) {
  return (
    <Page title="Not found" viewer={props.viewer}>
      <h1>Not found</h1>
      <p class="notice bad" role="alert">
        {props.what}
      </p>
      <p>
        <a href="/console/events">Back to the events</a>
      </p>
    </Page>
  );
}
