import type { Child } from "hono/jsx";
import { ApiProblem, OrganizationLink, Page, type Viewer } from "../layout";
import type { ApiError } from "../console-api";
import { ActivityChart, activityOf } from "./activity-chart";
import {
  actorHref,
  exportHref,
  NOUN,
  organizationHref,
  plural,
  relative,
  subjectHref,
  tally,
  targetHref,
  utcText,
  type Erasure,
  type InvEvent,
  type Kind,
  type Subject,
  type Tally,
} from "./investigate-view";

/** The pages' own rules (chart, lists, long ids); console.css does the rest. */
const STYLES = ["investigate.css"];

/** A time as people read it ("3 hours ago"), the exact UTC in its datetime and title. */
export function When(props: { iso: string; now: number }) {
  return (
    <time datetime={props.iso} title={utcText(props.iso)}>
      {relative(props.iso, props.now)}
    </time>
  );
}

/** A time with its exact UTC shown under it: for the events table, where the exact moment matters. */
function WhenExact(props: { iso: string; now: number }) {
  return (
    <>
      <When iso={props.iso} now={props.now} />
      <span class="exact">{utcText(props.iso)}</span>
    </>
  );
}

/** Dotted names (actions) may wrap after a dot, never inside a word. */
function Breakable(props: { text: string }) {
  const parts = props.text.split(/(?<=[./_-])/);
  return (
    <>
      {parts.map((part, i) => (
        <>
          {part}
          {i < parts.length - 1 ? <wbr /> : null}
        </>
      ))}
    </>
  );
}

/** How the subject reads in a sentence: "actor ada", "target user u_81". */
function Named(props: { subject: Subject }) {
  const s = props.subject;
  if (s.kind === "target") {
    return (
      <>
        target <code class="id">{s.type}</code> <code class="id">{s.id}</code>
      </>
    );
  }
  return (
    <>
      {NOUN[s.kind]} <code class="id">{s.id}</code>
    </>
  );
}

const titleOf = (s: Subject) => (s.kind === "target" ? `Target ${s.type} ${s.id}` : `${s.kind === "actor" ? "Actor" : "Organization"} ${s.id}`);
/** The page's <title>: ids are cut, so a tab or a history entry stays readable; the page shows them whole. */
const shortTitle = (s: Subject) => {
  // By code points: a cut never splits a character in two.
  const t = [...titleOf(s)];
  return t.length > 80 ? `${t.slice(0, 79).join("")}…` : t.join("");
};

function ActorCell(props: { actor: InvEvent["actor"]; anonymizedAt: string | null; now: number }) {
  const a = props.actor;
  if (props.anonymizedAt) {
    return (
      <>
        <span class="badge">anonymized</span> <span class="exact">erased <When iso={props.anonymizedAt} now={props.now} /></span>
      </>
    );
  }
  if (!a || (!a.id && !a.name && !a.email)) return <span class="muted">none</span>;
  const name = a.name ?? a.email;
  if (!a.id) return <>{name}</>;
  return (
    <>
      <a href={actorHref(a.id)} class="id">
        {a.id}
      </a>
      {name ? <span class="exact">{name}</span> : null}
    </>
  );
}

function Targets(props: { targets: InvEvent["targets"] }) {
  if (props.targets.length === 0) return null;
  return (
    <ul class="inv-targets">
      {props.targets.map((t) => (
        <li>
          <span class="muted">{t.type}:</span>{" "}
          <a href={targetHref(t.type, t.id)} class="id">
            {t.id}
          </a>
          {t.name ? <span class="exact">{t.name}</span> : null}
        </li>
      ))}
    </ul>
  );
}

function EventsTable(props: { rows: InvEvent[]; later: boolean; now: number }) {
  const { rows } = props;
  return (
    <div class="table-wrap" role="region" tabindex={0} aria-label="Events, newest first">
      <table class="events inv-events">
        <caption>{`${plural(rows.length, "event")}${props.later ? " (a later page)" : ""}, newest first`}</caption>
        <thead>
          <tr>
            <th scope="col">Occurred</th>
            <th scope="col">Action</th>
            <th scope="col">Actor</th>
            <th scope="col">Targets</th>
            <th scope="col">Organization</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((e) => (
            <tr>
              <td data-label="Occurred">
                <WhenExact iso={e.occurred_at} now={props.now} />
              </td>
              <td data-label="Action">
                <a href={`/console/events/${encodeURIComponent(e.id)}`} class="action">
                  <Breakable text={e.action} />
                </a>
                {e.display ? <span class="sentence">{e.display}</span> : null}
              </td>
              <td data-label="Actor">
                <ActorCell actor={e.actor} anonymizedAt={e.anonymized_at ?? null} now={props.now} />
              </td>
              <td data-label="Targets">
                <Targets targets={e.targets} />
              </td>
              <td data-label="Organization">
                <OrganizationLink id={e.organization} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Who or where, from the sample: each links to its own page. */
function TallyList(props: { id: string; title: string; items: Tally[]; none: number; noneText: string; href: (key: string) => string; basis: string; now: number }) {
  return (
    <section class="card" aria-labelledby={props.id}>
      <h2 id={props.id}>{props.title}</h2>
      <p class="muted">{props.basis}</p>
      {props.items.length === 0 && props.none === 0 ? <p>None.</p> : null}
      <ul class="inv-tally">
        {props.items.map((t) => (
          <li>
            <a href={props.href(t.key)} class="id">
              {t.key}
            </a>
            {t.name ? <span class="muted"> ({t.name})</span> : null}: {plural(t.count, "event")}, the last <When iso={t.last} now={props.now} />
          </li>
        ))}
        {props.none > 0 ? <li class="muted">{`${props.noneText}: ${plural(props.none, "event")}`}</li> : null}
      </ul>
    </section>
  );
}

export type ErasureState = { ok: true; erasures: Erasure[] } | { ok: false; error: ApiError } | null;

function ErasureText(props: { state: ErasureState; now: number }) {
  const { state } = props;
  if (!state) return null;
  if (!state.ok) return <span class="muted">{`Unknown: the erasure records could not be read (${state.error.code}: ${state.error.message})`}</span>;
  if (state.erasures.length === 0) return <>Not erased: no erasure names this actor id.</>;
  return (
    <ul class="plain">
      {state.erasures.map((e) => (
        <li>
          {e.status === "applying" ? <strong class="badge">being erased</strong> : <strong class="badge bad">erased</strong>} {e.status === "applying" ? "since" : "on"}{" "}
          <time datetime={e.erased_at} title={utcText(e.erased_at)}>
            {utcText(e.erased_at)}
          </time>{" "}
          (<When iso={e.erased_at} now={props.now} />)
          {e.organization ? (
            <>
              {" "}
              in organization <OrganizationLink id={e.organization} /> only
            </>
          ) : null}
          {e.anonymized !== null ? `: ${plural(e.anonymized, "event")} anonymized` : ": its events are being anonymized"}.{" "}
          <a href={targetHref("erasure", String(e.erasure_id))}>The erasure's record</a>
        </li>
      ))}
    </ul>
  );
}

export interface InvestigateProps {
  viewer: Viewer;
  subject: Subject;
  now: number;
  /** This page of the subject's events, newest first. */
  rows: InvEvent[];
  cursor: string | null;
  nextCursor: string | null;
  /** The newest events (a bounded number), for the chart and the lists; complete when there are no more. */
  sample: { events: InvEvent[]; complete: boolean } | { error: ApiError } | null;
  erasure: ErasureState;
  error: ApiError | null;
  /** The id is longer than ingest accepts: no event can name it, so /v1 was not asked. */
  overlong: boolean;
}

/** "all 37 events of this actor" or "this actor's newest 1,000 events (there are more)". */
function basisOf(subject: Subject, sample: { events: InvEvent[]; complete: boolean }) {
  const whose = subject.kind === "target" ? "naming this target" : `of this ${NOUN[subject.kind]}`;
  return sample.complete
    ? `Counted from all ${plural(sample.events.length, "event")} ${whose}.`
    : `Counted from the newest ${plural(sample.events.length, "event")} ${whose}; there are more, and older ones are not counted (no rollup counts events per ${NOUN[subject.kind]}).`;
}

function Summary(props: InvestigateProps) {
  const { subject, sample } = props;
  const counted = sample && "events" in sample ? sample : null;
  const newest = counted?.events[0]?.occurred_at ?? null;
  const oldest = counted?.complete ? (counted.events[counted.events.length - 1]?.occurred_at ?? null) : null;
  return (
    <section class="card" aria-labelledby="summary-title">
      <h2 id="summary-title">Summary</h2>
      <dl class="fields">
        {subject.kind === "target" ? (
          <>
            <dt>Target type</dt>
            <dd>
              <code class="id">{subject.type}</code>
            </dd>
          </>
        ) : null}
        <dt>{subject.kind === "actor" ? "Actor id" : subject.kind === "organization" ? "Organization" : "Target id"}</dt>
        <dd>
          <code class="id">{subject.id}</code>
        </dd>
        {counted ? (
          <>
            <dt>Events</dt>
            <dd>{counted.complete ? plural(counted.events.length, "event") : `more than ${plural(counted.events.length, "event")}`}</dd>
          </>
        ) : null}
        {newest ? (
          <>
            <dt>Newest event</dt>
            <dd>
              <When iso={newest} now={props.now} /> <span class="muted">({utcText(newest)})</span>
            </dd>
          </>
        ) : null}
        {oldest ? (
          <>
            <dt>Oldest event</dt>
            <dd>
              <When iso={oldest} now={props.now} /> <span class="muted">({utcText(oldest)})</span>
            </dd>
          </>
        ) : null}
        {subject.kind === "actor" ? (
          <>
            <dt>Erasure</dt>
            <dd>
              <ErasureText state={props.erasure} now={props.now} />
            </dd>
          </>
        ) : null}
        {newest ? (
          <>
            <dt>Export</dt>
            <dd>
              <ul class="inv-downloads">
                <li>
                  <a href={exportHref(subject, "csv")} download>
                    Download these events as CSV
                  </a>
                </li>
                <li>
                  <a href={exportHref(subject, "json")} download>
                    Download as JSON
                  </a>
                </li>
              </ul>
            </dd>
          </>
        ) : null}
      </dl>
    </section>
  );
}

function Empty(props: { subject: Subject; overlong: boolean; erasure: ErasureState }) {
  const erased = props.erasure?.ok && props.erasure.erasures.length > 0;
  return (
    <div class="notice" role="status">
      <p>
        No events for <Named subject={props.subject} />.
      </p>
      {props.overlong ? (
        <p>
          This id is longer than any event may carry (ingest refuses longer values), so no event can name it. Check that the address holds the whole id, and
          nothing else.
        </p>
      ) : erased ? (
        <p>Its erased events no longer carry this actor id, so they are not listed; events recorded after an erasure would be.</p>
      ) : (
        <p>No event in this project names it. Ids are matched exactly, letter case and spaces included.</p>
      )}
    </div>
  );
}

/** /console/actor, /console/organization and /console/target: one subject's events, activity, related actors or organizations, and export. */
export function InvestigatePage(props: InvestigateProps) {
  const { subject, sample, rows } = props;
  const counted = sample && "events" in sample ? sample : null;
  const empty = !props.error && rows.length === 0 && !props.cursor;
  const activity = counted ? activityOf(counted.events) : null;
  const basis = counted ? basisOf(subject, counted) : "";
  const lists: Child[] = [];
  if (counted && counted.events.length > 0) {
    if (subject.kind !== "organization") {
      const orgs = tally(counted.events, (e) => (e.organization ? { key: e.organization } : null));
      lists.push(
        <TallyList id="orgs-title" title="Organizations" {...orgs} noneText="No organization" href={organizationHref} basis={`The organizations its events name. ${basis}`} now={props.now} />,
      );
    }
    if (subject.kind !== "actor") {
      const actors = tally(counted.events, (e) => (e.actor?.id ? { key: e.actor.id, name: e.actor.name ?? e.actor.email } : null));
      lists.push(
        <TallyList id="actors-title" title="Actors" {...actors} noneText="No actor id (none sent, or anonymized)" href={actorHref} basis={`Who its events name. ${basis}`} now={props.now} />,
      );
    }
  }
  return (
    <Page title={shortTitle(subject)} viewer={props.viewer} styles={STYLES}>
      <p class="muted inv-crumb">
        <a href="/console/events">Events</a> › {subject.kind === "actor" ? "Actor" : subject.kind === "organization" ? "Organization" : "Target"}
      </p>
      <h1 class="inv-title">
        {subject.kind === "actor" ? "Actor " : subject.kind === "organization" ? "Organization " : "Target "}
        {subject.kind === "target" ? (
          <>
            <code class="id">{subject.type}</code>{" "}
          </>
        ) : null}
        <code class="id">{subject.id}</code>
      </h1>
      <Summary {...props} />
      {empty ? (
        <Empty subject={subject} overlong={props.overlong} erasure={props.erasure} />
      ) : (
        <>
          <section aria-labelledby="activity-title">
            <h2 id="activity-title">Activity</h2>
            {sample && "error" in sample ? (
              <p class="notice bad" role="alert">{`The chart is unavailable: ${sample.error.code}: ${sample.error.message}`}</p>
            ) : activity ? (
              <ActivityChart activity={activity} basis={basis} idPrefix="activity" />
            ) : null}
          </section>
          {lists.length > 0 ? <div class="inv-lists">{lists}</div> : null}
          <section aria-labelledby="events-title">
            <h2 id="events-title">Events</h2>
            <ApiProblem error={props.error} />
            {!props.error && (rows.length > 0 || props.cursor) ? <EventsTable rows={rows} later={props.cursor !== null} now={props.now} /> : null}
            <nav class="pager" aria-label="Pages of events">
              {props.cursor ? <a href={subjectHref(subject)}>First page</a> : null}
              {props.nextCursor ? (
                <a href={subjectHref(subject, props.nextCursor)} rel="next">
                  Next page (older)
                </a>
              ) : rows.length > 0 ? (
                <span class="muted">End of the list</span>
              ) : null}
            </nav>
          </section>
        </>
      )}
    </Page>
  );
}

const FIELDS: Record<Kind, { name: "type" | "id"; label: string }[]> = {
  actor: [{ name: "id", label: "Actor id" }],
  organization: [{ name: "id", label: "Organization" }],
  target: [
    { name: "type", label: "Target type" },
    { name: "id", label: "Target id" },
  ],
};

/** A 400: the address does not say which one; a form to say it. */
export function MissingPage(props: { viewer: Viewer; kind: Kind; missing: ("type" | "id")[]; values: { type?: string; id?: string } }) {
  const noun = NOUN[props.kind];
  const example = props.kind === "target" ? "/console/target?type=<target type>&id=<target id>" : `/console/${props.kind}?id=<${noun} id>`;
  const title = `Which ${noun}?`;
  return (
    <Page title={title} viewer={props.viewer} styles={STYLES}>
      <h1>{title}</h1>
      <div class="notice bad" role="alert">
        <p>
          {`This page needs the ${noun}'s ${props.missing.map((m) => (m === "type" ? "target type" : "id")).join(" and ")}, and the address has none. `}
          Its address is <code class="id">{example}</code>; the links on the events pages open it.
        </p>
      </div>
      <form method="get" action={`/console/${props.kind}`} class="filters" aria-label={`Open ${props.kind === "target" ? "a" : "an"} ${noun}`}>
        {FIELDS[props.kind].map((f) => (
          <label>
            <span>{f.label}</span>
            <input type="text" name={f.name} value={props.values[f.name] ?? ""} required autocomplete="off" />
          </label>
        ))}
        <div class="actions">
          <button type="submit">Open</button>
        </div>
      </form>
    </Page>
  );
}
