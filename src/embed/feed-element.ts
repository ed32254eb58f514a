/**
 * src/embed/: the feed customers embed in their own product: the custom
 * element (this file), its subresource digest (digest.ts) and the local demo
 * page (demo-page.ts).
 */
/**
 * Source of the <witness-feed> custom element, served as is by GET /embed/feed.js.
 * It is text, not a module of this worker: the only bundler here is wrangler's,
 * and the browser must get plain, dependency-free JavaScript. Rules that keep it
 * safe and CSP-friendly: data is only ever set with textContent or setAttribute
 * (no innerHTML), styles are a constructed stylesheet (no inline style
 * attributes), and nothing is evaluated. Written without template literals, so
 * the String.raw below holds it verbatim. The IIFE's body is not indented: the
 * script must stay under 17,000 characters (test/routes/embed-feed.test.ts),
 * and that budget buys more as code than as leading spaces.
 *
 * What a failed read shows, each its own data-state and words: 401 is
 * "expired" when the server says so (error.details.reason) or, failing
 * that, when the token's own exp claim has passed (a minute's clock skew
 * allowed), else "invalid" (altered, another service's, or its minting key
 * revoked or unable to read); 403 "forbidden"; no answer or a 5xx
 * "unreachable", with a retry. Only "expired" dispatches
 * witness-feed-expired, the host page's cue to mint a new token; events stay
 * on screen only while the token may still read them (DENIED clears them).
 */
export const FEED_ELEMENT_JS = String.raw`/* <witness-feed>: read-only Witness audit feed. Usage: README, "Feed component". */
(function () {
"use strict";
if (!window.customElements || customElements.get("witness-feed")) return;

var script = document.currentScript;
var SCRIPT_ORIGIN = script && script.src ? new URL(script.src).origin : location.origin;
var PAGE_SIZE = 20;
var TEXT = {
  loading: "Loading events\u2026",
  loadingMore: "Loading more events\u2026",
  empty: "No events yet.",
  noMatch: "No events match your search.",
  error: "The events could not be loaded.",
  unreachable: "The audit log could not be reached. Try again in a moment.",
  limited: "Too many requests. Try again in a moment.",
  forbidden: "This token may not read these events.",
  expired: "Access to this feed has expired. Reload the page to see it again.",
  invalid: "This feed's token is not valid, or the key that minted it was revoked or cannot read events.",
  noToken: "No token: set the token attribute of <witness-feed>.",
  badBase: "The base-url attribute is not a valid http(s) URL."
};
var CSS = [
  ":host{display:block;font-family:var(--witness-font,system-ui,-apple-system,'Segoe UI',Roboto,sans-serif);",
  "font-size:var(--witness-font-size,14px);line-height:1.45;color:var(--witness-fg,#1f2328);",
  "background:var(--witness-bg,#fff);border:1px solid var(--witness-border,#d0d7de);",
  "border-radius:var(--witness-radius,8px);overflow:hidden}",
  ":host([hidden]),[hidden]{display:none!important}",
  "*{box-sizing:border-box}",
  "form{display:flex;gap:8px;margin:0;padding:12px;border-bottom:1px solid var(--witness-border,#d0d7de)}",
  "input{flex:1;min-width:0;font:inherit;color:inherit;background:var(--witness-input-bg,transparent);",
  "border:1px solid var(--witness-border,#d0d7de);border-radius:var(--witness-radius,8px);padding:6px 10px}",
  "button{font:inherit;cursor:pointer;color:var(--witness-accent-fg,#fff);background:var(--witness-accent,#0969da);",
  "border:1px solid var(--witness-accent,#0969da);border-radius:var(--witness-radius,8px);padding:6px 14px}",
  "button.secondary{color:var(--witness-accent,#0969da);background:transparent}",
  "button:disabled{opacity:.6;cursor:progress}",
  ":focus-visible{outline:2px solid var(--witness-focus,var(--witness-accent,#0969da));outline-offset:2px}",
  ".status{margin:0;padding:12px;color:var(--witness-muted,#656d76)}",
  ".status:empty{display:none}",
  "section:not([data-state=ready],[data-state=loading],[data-state=empty]) .status{color:var(--witness-error,#cf222e)}",
  "ol{list-style:none;margin:0;padding:0}",
  "li{border-bottom:1px solid var(--witness-border,#d0d7de)}",
  "li:last-child{border-bottom:0}",
  "button.row{display:block;width:100%;text-align:left;font:inherit;color:inherit;background:transparent;border:0;",
  "border-radius:0;padding:10px 12px;cursor:pointer}",
  "button.row:hover,button.row[aria-expanded=true]{background:var(--witness-hover,rgba(127,127,127,.08))}",
  ":focus-visible.row{outline-offset:-2px}",
  ".head{display:flex;justify-content:space-between;align-items:baseline;gap:12px}",
  ".panel{padding:4px 12px 12px}",
  "dl{display:grid;grid-template-columns:minmax(5rem,max-content) 1fr;gap:4px 12px;margin:0 0 10px}",
  "dt{color:var(--witness-muted,#656d76)}dd{margin:0;overflow-wrap:anywhere}",
  ".receipt{color:var(--witness-accent,#0969da);font-weight:600}",
  ".head>span{font-weight:600;overflow-wrap:anywhere}",
  ".detail{display:block;overflow-wrap:anywhere}",
  "time,.detail{color:var(--witness-muted,#656d76);font-size:.9em}",
  "time{white-space:nowrap}",
  "table{border-collapse:collapse;width:100%;max-width:48rem;table-layout:fixed;margin:0 0 10px}",
  "caption,th{text-align:left}",
  "thead th{color:var(--witness-muted,#656d76);font-weight:400}",
  "th,td{vertical-align:top;padding:2px 12px 2px 0;overflow-wrap:anywhere}",
  ".actions{display:flex;justify-content:center;gap:8px;padding:0 12px}",
  ".actions:has(button:not([hidden])){padding:12px;border-top:1px solid var(--witness-border,#d0d7de)}"
].join("");

var sheet = null;
function applyStyles(root) {
  try {
    if (!sheet) { sheet = new CSSStyleSheet(); sheet.replaceSync(CSS); }
    root.adoptedStyleSheets = [sheet];
  } catch (e) {
    var style = document.createElement("style");
    style.textContent = CSS;
    root.appendChild(style);
  }
}

function el(tag, className, text) {
  var node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function baseUrl(attr) {
  try {
    var url = new URL(attr || SCRIPT_ORIGIN, location.href);
    if (url.protocol !== "https:" && url.protocol !== "http:") return null;
    return url.origin + url.pathname.replace(/\/+$/, "").replace(/\/v1$/, "");
  } catch (e) {
    return null;
  }
}

function pageSize(attr) {
  var n = Number(attr);
  return Number.isInteger(n) && n >= 1 && n <= 200 ? n : PAGE_SIZE;
}

var UNITS = [["year", 31536000], ["month", 2592000], ["week", 604800], ["day", 86400], ["hour", 3600], ["minute", 60]];
function relativeTime(iso) {
  var t = Date.parse(iso);
  if (isNaN(t)) return String(iso);
  var seconds = (t - Date.now()) / 1000;
  var format = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
  for (var i = 0; i < UNITS.length; i++) {
    if (Math.abs(seconds) >= UNITS[i][1]) return format.format(Math.round(seconds / UNITS[i][1]), UNITS[i][0]);
  }
  return format.format(Math.abs(seconds) < 45 ? 0 : Math.round(seconds), "second");
}

function exactTime(iso) {
  var t = Date.parse(iso);
  if (isNaN(t)) return String(iso);
  return new Date(t).toLocaleString(undefined, { dateStyle: "full", timeStyle: "long" }) + " (" + iso + ")";
}

function actorText(e) {
  var a = e.actor || {};
  if (a.name) return a.name;
  if (a.id) return a.id;
  if (e.anonymized_at) return "Erased actor";
  return a.type || "System";
}

function targetText(e) {
  var list = Array.isArray(e.targets) ? e.targets : [];
  if (list.length === 0) return "";
  var t = list[0] || {};
  var text = (t.type ? t.type + ": " : "") + (t.name || t.id || "");
  return list.length > 1 ? text + " (+" + (list.length - 1) + " more)" : text;
}

function targetsText(e) {
  var list = Array.isArray(e.targets) ? e.targets : [];
  return list.map(function (t) {
    t = t || {};
    return (t.type ? t.type + ": " : "") + (t.name ? t.name + " (" + (t.id || "") + ")" : t.id || "");
  }).join(", ");
}

function pair(dl, name, value) {
  if (value === undefined || value === null || value === "") return;
  dl.append(el("dt", null, name), el("dd", null, value));
}

// Cut by code point, so a long value never ends in half an emoji.
function side(c, key, absent) {
  if (!(key in c)) return absent;
  var s = Array.from(JSON.stringify(c[key]));
  return s.length > 80 ? s.slice(0, 79).join("") + "\u2026" : s.join("");
}

// Headers, not color, tell before from after.
function changesTable(list) {
  var table = el("table"), tr = table.createTHead().insertRow();
  table.createCaption().textContent = "Changes";
  ["Field", "Before", "After"].forEach(function (h) { tr.appendChild(el("th", null, h)).scope = "col"; });
  var body = table.createTBody();
  list.forEach(function (c) {
    c = Object(c);
    tr = body.insertRow();
    tr.appendChild(el("th", null, c.field)).scope = "row";
    tr.insertCell().textContent = side(c, "before", "(none)");
    tr.insertCell().textContent = side(c, "after", "(removed)");
  });
  return table;
}

var panels = 0;
var DENIED = { expired: 1, invalid: 1, forbidden: 1 };

function expired(token, body) {
  var why = body && body.error && body.error.details && body.error.details.reason;
  if (why) return why === "expired";
  try {
    var exp = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).exp;
    return exp * 1000 <= Date.now() + 60000;
  } catch (e) {
    return false;
  }
}

/** A row is a disclosure button for its details and receipt link; Escape in them returns to it. */
function row(e, base) {
  var li = el("li");
  li.setAttribute("part", "item");
  var button = el("button", "row");
  button.type = "button";
  button.setAttribute("aria-expanded", "false");
  var head = el("span", "head");
  var said = typeof e.display == "string" && e.display;
  var action = el(said ? "code" : "span", "action", e.action);
  head.appendChild(said ? el("span", null, said) : action);
  var time = el("time", null, relativeTime(e.occurred_at));
  time.setAttribute("datetime", String(e.occurred_at));
  time.setAttribute("title", exactTime(e.occurred_at));
  head.appendChild(time);
  var target = targetText(e);
  button.appendChild(head);
  var detail = el("span", "detail", actorText(e) + (target ? " \u00b7 " + target : ""));
  // The action stays in view: search and the API know the event by it.
  if (said) detail.prepend(action, " \u00b7 ");
  button.appendChild(detail);
  var panel = el("div", "panel");
  panel.id = "witness-event-" + ++panels;
  panel.hidden = true;
  panel.setAttribute("part", "panel");
  panel.setAttribute("role", "region");
  panel.setAttribute("aria-label", "Event details");
  button.setAttribute("aria-controls", panel.id);
  var dl = el("dl");
  var a = e.actor || {};
  pair(dl, "Action", e.action);
  pair(dl, "Actor", [a.name, a.id, a.type].filter(Boolean).join(" \u00b7 ") || actorText(e));
  pair(dl, "Targets", targetsText(e));
  pair(dl, "Organization", e.organization);
  pair(dl, "When", exactTime(e.occurred_at));
  pair(dl, "Event id", e.id);
  if (e.anonymized_at) pair(dl, "Erased", "Personal data erased " + exactTime(e.anonymized_at));
  panel.appendChild(dl);
  if (Array.isArray(e.changes) && e.changes.length) panel.appendChild(changesTable(e.changes));
  if (e.id) {
    var link = el("a", "receipt", "View receipt");
    link.href = base + "/receipts/" + encodeURIComponent(e.id);
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    link.setAttribute("part", "receipt-link");
    panel.appendChild(link);
  }
  button.addEventListener("click", function () {
    var open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", open ? "true" : "false");
    panel.hidden = !open;
  });
  panel.addEventListener("keydown", function (ev) {
    if (ev.key !== "Escape") return;
    ev.stopPropagation();
    button.setAttribute("aria-expanded", "false");
    panel.hidden = true;
    button.focus();
  });
  li.append(button, panel);
  return li;
}

class WitnessFeed extends HTMLElement {
  static get observedAttributes() { return ["token", "base-url", "page-size"]; }

  constructor() {
    super();
    var root = this.attachShadow({ mode: "open" });
    applyStyles(root);
    var self = this;
    this._feed = el("section");
    this._feed.setAttribute("aria-label", "Audit log");
    this._feed.setAttribute("part", "feed");
    var form = el("form");
    form.setAttribute("role", "search");
    this._input = el("input");
    this._input.type = "search";
    this._input.maxLength = 255;
    this._input.placeholder = "Search events";
    this._input.setAttribute("aria-label", "Search events");
    var submit = el("button", null, "Search");
    submit.type = "submit";
    form.append(this._input, submit);
    this._status = el("p", "status");
    this._status.setAttribute("role", "status");
    this._status.setAttribute("aria-live", "polite");
    this._list = el("ol");
    this._list.setAttribute("aria-label", "Events");
    var actions = el("div", "actions");
    this._more = el("button", "secondary", "Load more");
    this._more.type = "button";
    this._retry = el("button", "secondary", "Try again");
    this._retry.type = "button";
    actions.append(this._more, this._retry);
    this._feed.append(form, this._status, this._list, actions);
    root.appendChild(this._feed);

    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      self._query = self._input.value.trim();
      self._load(false);
    });
    this._input.addEventListener("input", function () {
      if (self._input.value.trim() === "" && self._query !== "") { self._query = ""; self._load(false); }
    });
    this._more.addEventListener("click", function () { self._load(true); });
    this._retry.addEventListener("click", function () { self._load(self._lastAppend); });

    this._query = "";
    this._cursor = null;
    this._seq = 0;
    this._controller = null;
    this._scheduled = false;
    this._lastAppend = false;
  }

  connectedCallback() {
    var self = this;
    this._schedule();
    this._ticker = setInterval(function () { self._refreshTimes(); }, 60000);
  }

  disconnectedCallback() {
    clearInterval(this._ticker);
    if (this._controller) this._controller.abort();
  }

  attributeChangedCallback(name, before, after) {
    if (before !== after) this._schedule();
  }

  /** Attribute changes and connection arrive together on upgrade: load once. */
  _schedule() {
    var self = this;
    if (this._scheduled) return;
    this._scheduled = true;
    queueMicrotask(function () {
      self._scheduled = false;
      if (self.isConnected) { self._cursor = null; self._load(false); }
    });
  }

  _refreshTimes() {
    var times = this._list.querySelectorAll("time");
    for (var i = 0; i < times.length; i++) times[i].textContent = relativeTime(times[i].getAttribute("datetime"));
  }

  _setState(state, message) {
    this._feed.setAttribute("data-state", state);
    this._status.textContent = message || "";
    var busy = state === "loading";
    this._list.setAttribute("aria-busy", busy ? "true" : "false");
    this._more.disabled = busy;
    this._more.hidden = !(this._cursor && (state === "ready" || (busy && this._lastAppend)));
    this._more.textContent = busy && this._lastAppend ? TEXT.loadingMore : "Load more";
    this._retry.hidden = state !== "error" && state !== "unreachable";
  }

  _fail(state, message, append) {
    if (!append || DENIED[state]) { this._list.textContent = ""; this._cursor = null; }
    this._setState(state, message);
    if (state === "expired") {
      this.dispatchEvent(new CustomEvent("witness-feed-expired", { bubbles: true, composed: true }));
    }
  }

  async _load(append) {
    var seq = ++this._seq;
    if (this._controller) this._controller.abort();
    var controller = (this._controller = new AbortController());
    this._lastAppend = append;
    if (!append) this._cursor = null;
    var token = this.getAttribute("token");
    var base = baseUrl(this.getAttribute("base-url"));
    if (!token) return this._fail("error", TEXT.noToken, false);
    if (!base) return this._fail("error", TEXT.badBase, false);
    var params = new URLSearchParams();
    params.set("limit", String(pageSize(this.getAttribute("page-size"))));
    if (this._query) params.set("q", this._query);
    if (append && this._cursor) params.set("cursor", this._cursor);
    this._setState("loading", append ? TEXT.loadingMore : TEXT.loading);
    var res, body;
    try {
      res = await fetch(base + "/v1/events" + (this._query ? "/search" : "") + "?" + params.toString(), {
        headers: { Authorization: "Bearer " + token },
        credentials: "omit",
        referrerPolicy: "no-referrer",
        cache: "no-store",
        signal: controller.signal
      });
      body = await res.json().catch(function () { return null; });
    } catch (e) {
      if (seq === this._seq) this._fail("unreachable", TEXT.unreachable, append);
      return;
    }
    if (seq !== this._seq) return;
    var s = res.status;
    if (s === 401) return expired(token, body) ? this._fail("expired", TEXT.expired, append) : this._fail("invalid", TEXT.invalid, append);
    if (s === 403) return this._fail("forbidden", TEXT.forbidden, append);
    if (s >= 500) return this._fail("unreachable", TEXT.unreachable, append);
    if (!res.ok || !body || !Array.isArray(body.data)) return this._fail("error", s === 429 ? TEXT.limited : TEXT.error, append);
    if (!append) this._list.textContent = "";
    for (var i = 0; i < body.data.length; i++) this._list.appendChild(row(body.data[i], base));
    this._cursor = typeof body.nextCursor === "string" && body.data.length > 0 ? body.nextCursor : null;
    var count = this._list.children.length;
    if (count === 0) return this._setState("empty", this._query ? TEXT.noMatch : TEXT.empty);
    this._setState("ready", append ? body.data.length + " more events loaded." : "");
  }
}

customElements.define("witness-feed", WitnessFeed);
})();
`;
