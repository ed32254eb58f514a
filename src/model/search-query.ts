/**
 * User search text -> terms. Nothing the user types is ever parsed as FTS5
 * syntax: the text is cut into words the way the index tokenizer
 * (unicode61 remove_diacritics 2) cuts it, and each word becomes a quoted
 * prefix term. Quotes, parentheses, `*`, `-`, `:`, AND, NEAR, emoji: all just
 * separators or plain words.
 *
 * The same folding also backs a JavaScript matcher, so common terms can be
 * checked while walking the list index instead of asking FTS5 for every match
 * (see event-read.ts). It mirrors unicode61 for letters and digits of every
 * script; it differs only on exotic code points (isolated combining marks,
 * characters newer than Unicode 6.1).
 */

const WORD = /[\p{L}\p{N}\p{Co}]+/gu;
const ASCII = /^[\x00-\x7f]*$/;
const LATIN_WITH_MARKS = /^[a-z][\u0300-\u036f]+$/;

/** unicode61 folds case per character (final sigma to sigma, long s to s) and strips diacritics from Latin letters only. */
function foldChar(c: string): string {
  if (c === "\u0130") return "i";
  const upper = c.toUpperCase();
  let lower = upper.length === c.length ? upper.toLowerCase() : c.toLowerCase();
  if (lower.length !== c.length) lower = c;
  const decomposed = lower.normalize("NFD");
  return LATIN_WITH_MARKS.test(decomposed) ? decomposed[0] : lower;
}

function fold(text: string): string {
  if (ASCII.test(text)) return text.toLowerCase();
  let out = "";
  for (const c of text) out += c < "\u0080" ? c.toLowerCase() : foldChar(c);
  return out.replace(/[\u0300-\u036f]/g, "");
}

/** The words of a text as the index sees them. */
export function words(text: string): string[] {
  return fold(text).match(WORD) ?? [];
}

/** Shorter terms are ignored: a one-character prefix matches most of a project and costs every tenant of its shard. */
export const MIN_TERM_CHARS = 2;
/** More terms than this is a 400: each one is another doclist to read. */
export const MAX_TERMS = 8;

/**
 * Distinct search terms of q, each at least MIN_TERM_CHARS characters (code
 * points). A term that is a prefix of another adds nothing (whatever word
 * matches `login` also matches `log`), so it is dropped. Empty when q has no
 * word of two characters or more; the caller refuses more than MAX_TERMS.
 */
export function searchTerms(q: string): string[] {
  const unique = [...new Set(words(q))].filter((t) => [...t].length >= MIN_TERM_CHARS);
  return unique.filter((t) => !unique.some((other) => other !== t && other.startsWith(t)));
}

/**
 * The FTS5 MATCH expression: every term a quoted prefix behind the project's
 * tag (search-index.ts), all of them required. Terms are words() output, so
 * the index tokenizer keeps each one whole.
 */
export function ftsExpression(terms: string[], tag: string): string {
  return terms.map((t) => `"${tag}${t.replaceAll('"', '""')}"*`).join(" AND ");
}

/** True when every term is the start of some word of the searchable texts (the FTS5 rule). */
export function matchesAll(terms: string[], texts: ReadonlyArray<string | null>): boolean {
  const tokens = texts.flatMap((t) => (t ? words(t) : []));
  return terms.every((term) => tokens.some((w) => w.startsWith(term)));
}
