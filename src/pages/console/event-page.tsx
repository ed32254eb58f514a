import type { Child } from "hono/jsx";
import { actorHref, organizationHref, Page, plural, TableBox, targetHref, When, type Viewer } from "./layout";

type Json = Record<string, any>;

function Row(props: { name: string; children: Child }) {
  return (
    <>
      <dt>{props.name}</dt>
      <dd>{props.children}</dd>
    </>
  );
}

const orNone = (v: unknown) => (v === null || v === undefined || v === "" ? <em>none</em> : <code class="id">{String(v)}</code>);

/** An id that opens its investigation page, as text (JSX escapes it; the address encodes it). */
const linked = (v: unknown, href: (id: string) => string) =>
  typeof v === "string" && v !== "" ? (
    <a href={href(v)}>
      <code class="id">{v}</code>
    </a>
  ) : (
    orNone(v)
  );

/** Which schema version ingest checked the event against, and the verdict, in words. */
function SchemaCheck(props: { event: Json }) {
  const { schema_version: version, schema_valid: valid, action } = props.event;
  if (typeof version !== "number") return <em>not checked (the catalog was off, or the action had no schema, when it was recorded)</em>;
  return (
    <>
      checked against <a href={`/console/catalog/${encodeURIComponent(action)}?version=${version}`}>version {String(version)}</a> of its schema:{" "}
      {valid === false ? <strong class="badge bad">broke it</strong> : <span class="badge ok">passed</span>}
    </>
  );
}

type Change = { field: string; before?: unknown; after?: unknown };

const valueText = (v: unknown) => JSON.stringify(v) ?? String(v);

/**
 * Before and after of each changed field. The change is said in words and
 * marked with del/ins (struck through, underlined), so colour is never the
 * only sign of it.
 */
export function ChangesTable(props: { changes: Change[] }) {
  return (
    <table class="diff">
      <caption>{`${plural(props.changes.length, "field")} in the event's changes, as its sender recorded them`}</caption>
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">Before</th>
          <th scope="col">After</th>
          <th scope="col">Change</th>
        </tr>
      </thead>
      <tbody>
        {props.changes.map((c) => {
          const hasBefore = Object.hasOwn(c, "before");
          const hasAfter = Object.hasOwn(c, "after");
          const same = hasBefore && hasAfter && valueText(c.before) === valueText(c.after);
          const kind = same ? "unchanged" : hasBefore && hasAfter ? "changed" : hasAfter ? "added" : hasBefore ? "removed" : "named only";
          return (
            <tr>
              <th scope="row">
                <code>{c.field}</code>
              </th>
              <td>{!hasBefore ? <em>(none)</em> : same ? <code>{valueText(c.before)}</code> : <del><code>{valueText(c.before)}</code></del>}</td>
              <td>{!hasAfter ? <em>(removed)</em> : same ? <code>{valueText(c.after)}</code> : <ins><code>{valueText(c.after)}</code></ins>}</td>
              <td>{kind}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

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
      {e.display ? <p class="sentence lead">{e.display}</p> : null}
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
      {Array.isArray(e.changes) && e.changes.length > 0 ? (
        <section class="card" aria-labelledby="changes-title">
          <h2 id="changes-title">Changes</h2>
          <TableBox label="Table of changes">
            <ChangesTable changes={e.changes} />
          </TableBox>
        </section>
      ) : null}
      <div class="grid2">
        <section aria-labelledby="fields-title">
          <h2 id="fields-title">Fields</h2>
          <dl class="fields">
            <Row name="Id">{orNone(e.id)}</Row>
            <Row name="Action">{orNone(e.action)}</Row>
            <Row name="Occurred at">
              <When at={e.occurred_at} exact none="none" />
            </Row>
            <Row name="Organization">{linked(e.organization, organizationHref)}</Row>
            <Row name="Actor">
              {actor ? (
                <>
                  {orNone(actor.type)} / {linked(actor.id, actorHref)}
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
                      {orNone(t.type)} /{" "}
                      {typeof t.type === "string" && t.type && typeof t.id === "string" && t.id ? linked(t.id, (id) => targetHref(t.type, id)) : orNone(t.id)}
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
            <Row name="Personal data erased">
              <When at={e.anonymized_at} exact none="no" />
            </Row>
            <Row name="Metadata">{e.metadata ? <pre>{JSON.stringify(e.metadata, null, 2)}</pre> : <em>none</em>}</Row>
            <Row name="Schema">
              <SchemaCheck event={e} />
            </Row>
          </dl>
        </section>
        <section aria-labelledby="chain-title">
          <h2 id="chain-title">Place in the chain</h2>
          <dl class="fields">
            <Row name="Seq">#{String(e.seq)}</Row>
            <Row name="Previous hash">{e.prev_hash ? <code class="hash">{e.prev_hash}</code> : <em>none (first event)</em>}</Row>
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
