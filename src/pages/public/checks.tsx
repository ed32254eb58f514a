import type { Child } from "hono/jsx";

export type CheckState = "pass" | "fail" | "skip";

/** One check as a reader sees it: what was checked, its result in words, an icon; colour only repeats the words. */
export function CheckItem(props: { what: string; state: CheckState; result: string; why?: Child }) {
  const icon = props.state === "pass" ? "✓" : props.state === "fail" ? "✗" : "–";
  return (
    <li class={`check ${props.state}`} data-check={props.what}>
      <span class="icon" aria-hidden="true">
        {icon}
      </span>
      <span>
        <span class="what">{props.what}</span>
        <span class="result">{props.result}</span>
        {props.why ? <span class="why">{props.why}</span> : null}
      </span>
    </li>
  );
}
