import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ftsExpression, MAX_TERMS, matchesAll, searchTerms, words } from "../../src/model/search-query";

describe("searchTerms", () => {
  it("cuts text into lower-case words at spaces and punctuation", () => {
    expect(searchTerms("bob@acme.test")).toEqual(["bob", "acme", "test"]);
    expect(searchTerms("User.LOGIN")).toEqual(["user", "login"]);
    expect(searchTerms("u_42")).toEqual(["42"]);
  });

  it("ignores terms shorter than two characters (code points, not UTF-16 units)", () => {
    expect(searchTerms("a b c d e f g h i j")).toEqual([]);
    expect(searchTerms("a login")).toEqual(["login"]);
    expect(searchTerms("京 北京 𝒜 𝒜𝒜")).toEqual(["北京", "𝒜𝒜"]);
    expect(searchTerms("ab")).toEqual(["ab"]);
  });

  it("counts terms after dropping short and implied ones, so the cap applies to what is searched", () => {
    expect(searchTerms("aa bb cc dd ee ff gg hh ii a b c")).toHaveLength(MAX_TERMS + 1);
    expect(searchTerms("lo log logi login aa bb cc dd ee ff gg")).toHaveLength(MAX_TERMS);
  });

  it("drops duplicates and terms that another term already implies", () => {
    expect(searchTerms("log login LOGIN")).toEqual(["login"]);
  });

  it("turns FTS5 syntax into plain words or nothing", () => {
    expect(searchTerms('"a" OR (b*) AND NEAR(c d, 2) -e f:g ^h {i j} + 🙂')).toEqual(
      ["or", "and", "near"],
    );
    expect(searchTerms('"*()-:^+{}🙂🙂 ,.;')).toEqual([]);
  });

  it("folds case and Latin diacritics like the index does", () => {
    expect(words("José MÜLLER Ångström ΣΊΣΥΦΟΣ İstanbul straße")).toEqual(["jose", "muller", "angstrom", "σίσυφοσ", "istanbul", "straße"]);
  });
});

describe("ftsExpression", () => {
  it("quotes every term as a prefix and requires all of them", () => {
    expect(ftsExpression(["bob", "acme"], "0a1b2c")).toBe('"0a1b2cbob"* AND "0a1b2cacme"*');
  });
});

describe("matchesAll agrees with FTS5 (unicode61 remove_diacritics 2)", () => {
  const texts = [
    "user.login.succeeded", "José Álvarez", "MÜLLER", "Ёлка", "Σίσυφος", "naïve café", "北京 東京", "İstanbul",
    "bob@acme.test", "O'Brien-Smith", "xx_yy:zz", "ǅemal", "ﬁle", "Straße", "Øresund", "smile 🙂", "ＦＵＬＬ",
  ];
  const queries = [
    "logi", "jos", "alv", "álv", "mull", "müll", "ёл", "ел", "σισ", "σίσ", "naive", "caf", "北京", "ist", "bob acme", "bob@acme.test",
    "o brien", "smi", "yy zz", "dz", "ǆem", "fi", "file", "stras", "straß", "ores", "øre", "smile", "full", "ｆｕｌｌ",
  ];

  it("on accented, non-Latin and punctuated text", async () => {
    await env.DB.exec("CREATE VIRTUAL TABLE IF NOT EXISTS fold_probe USING fts5(a, tokenize='unicode61 remove_diacritics 2', prefix='2 3')");
    await env.DB.prepare("DELETE FROM fold_probe").run();
    await env.DB.batch(texts.map((t, i) => env.DB.prepare("INSERT INTO fold_probe (rowid, a) VALUES (?, ?)").bind(i + 1, t)));
    for (const q of queries) {
      const terms = searchTerms(q);
      expect(terms.length, q).toBeGreaterThan(0);
      const { results } = await env.DB.prepare("SELECT rowid AS i FROM fold_probe WHERE fold_probe MATCH ? ORDER BY rowid")
        .bind(ftsExpression(terms, ""))
        .all<{ i: number }>();
      const byFts = results.map((r) => texts[r.i - 1]);
      const byJs = texts.filter((t) => matchesAll(terms, [t]));
      expect(byJs, q).toEqual(byFts);
    }
  });
});
