import { grants } from "../../auth/scopes";
import { ApiProblem, Page, plural, TableBox, When, type Viewer } from "./layout";
import type { ApiError } from "./console-api";

export interface RetentionState {
  rules: { pattern: string; days: number }[];
  locked: boolean;
  locked_at: string | null;
}

export function RetentionPage(props: { viewer: Viewer; plan: RetentionState | null; hotDays: number | null; error: ApiError | null; saved: boolean }) {
  const admin = grants(props.viewer.scopes, "admin");
  const plan = props.plan;
  return (
    <Page title="Retention" viewer={props.viewer} active="retention">
      <h1>Retention and tiering</h1>
      <ApiProblem error={props.error} />
      {props.saved ? (
        <p class="notice" role="status">
          The retention plan was saved (and recorded in the chain).
        </p>
      ) : null}
      <section class="card" aria-labelledby="plan-title">
        <h2 id="plan-title">Retention plan</h2>
        {plan ? (
          <>
            <p>
              {plan.locked ? (
                <>
                  <span class="badge ok">Locked</span> since <When at={plan.locked_at} none="an unknown time" />: it may only keep events longer
                </>
              ) : (
                <span class="badge">Not locked</span>
              )}
            </p>
            {plan.rules.length === 0 ? (
              <p>No rules: every event is kept forever.</p>
            ) : (
              <TableBox label="Retention rules">
              <table>
                <caption>{`${plural(plan.rules.length, "rule")}, in the order they apply`}</caption>
                <thead>
                  <tr>
                    <th scope="col">Actions</th>
                    <th scope="col">Kept for</th>
                  </tr>
                </thead>
                <tbody>
                  {plan.rules.map((r) => (
                    <tr>
                      <td>
                        <code>{r.pattern}</code>
                      </td>
                      <td>{plural(r.days, "day")}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              </TableBox>
            )}
          </>
        ) : null}
        {admin && plan ? (
          <form method="post" action="/console/retention" class="stack">
            <input type="hidden" name="csrf" value={props.viewer.csrf} />
            <label for="rules">Rules, one per line: pattern and days (like "debug.* 30" or "* 2555")</label>
            <textarea id="rules" name="rules" rows={6}>
              {plan.rules.map((r) => `${r.pattern} ${r.days}`).join("\n")}
            </textarea>
            {plan.locked ? null : (
              <label class="check">
                <input type="checkbox" name="lock" value="true" /> Lock the plan for good (it can then only keep events longer)
              </label>
            )}
            <button type="submit">Save the plan</button>
          </form>
        ) : (
          <p class="muted">Changing the plan needs an admin key.</p>
        )}
      </section>
      <section class="card" aria-labelledby="tier-title">
        <h2 id="tier-title">Tiering</h2>
        <p>
          {props.hotDays === null
            ? "Every event stays in the hot tier (no archive)."
            : `Events older than ${plural(props.hotDays, "day")} move to the cold archive (R2, sealed segments); they can still be opened, exported and verified.`}
        </p>
        <p class="muted">
          The operator sets the hot window with <code>npm run projects:tiering</code>.
        </p>
      </section>
    </Page>
  );
}
