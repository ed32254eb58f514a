import { describe, expect, it } from "vitest";
import { canonicalize } from "../../src/sealing/canonical";
import { personalDataText, piiCommitment, sealRow } from "../../src/sealing/payload";
import { COLUMNS, columnValues } from "../../src/chain/event-insert";
import { searchWords } from "../../src/model/search-index";
import { rowIndexing } from "../../src/model/row-indexing";
import { sealEvents } from "../../src/chain/seal-events";
import { loadKeyring } from "../../src/sealing/signing-keys";
import type { NewEvent } from "../../src/model/new-event";

const event = (i: number, over: Partial<NewEvent> = {}): NewEvent => ({
  action: `document.shared.${i}`,
  organization: i % 2 ? "org_é" : null,
  actor_id: `u_${i}`,
  actor_type: "user",
  actor_name: i % 3 ? 'Ada "Quote" \u2028' : null,
  actor_email: "ada@example.com",
  targets: canonicalize([{ type: "document", id: `doc_${i}`, name: null }]),
  metadata: canonicalize({ z: [1, { b: 2, a: "é\n" }], i }),
  occurred_at: i % 2 ? "2026-05-05T05:05:05.000Z" : null,
  ip_address: "203.0.113.9",
  user_agent: null,
  ...over,
});

describe("sealEvents", () => {
  it("seals each event as sealRow() and piiCommitment() do, chained from the head", async () => {
    const ring = await loadKeyring("1:an-old-signing-key-0123,2:the-newest-signing-key-456");
    const head = { seq: 41, hash: "ab".repeat(32) };
    const events = [event(1), event(2), event(3, { actor_id: null, ip_address: null, metadata: "{}", targets: "[]" })];
    const rows = await sealEvents(ring, "demo", head, events);
    expect(rows.map((r) => r.seq)).toEqual([42, 43, 44]);
    let prev: string | null = head.hash;
    for (const [i, row] of rows.entries()) {
      const e = events[i];
      expect(row).toMatchObject({ ...e, project_id: "demo", occurred_at: e.occurred_at ?? row.received_at, prev_hash: prev, anonymized_at: null });
      expect(row.pii_salt).toMatch(/^[0-9a-f]{32}$/);
      expect(row.pii_commitment).toBe(await piiCommitment(row.pii_salt!, e));
      const { hash: _hash, signature: _signature, ...fields } = row;
      const resealed = await sealRow(fields, ring);
      expect(row.hash).toBe(resealed.hash);
      expect(row.signature).toBe(resealed.signature);
      expect(row.signature).toMatch(/^v2:[0-9a-f]{64}$/);
      prev = row.hash;
    }
  });

  it("starts a chain from an empty head with no prev_hash", async () => {
    const ring = await loadKeyring("1:an-old-signing-key-0123");
    const [row] = await sealEvents(ring, "demo", { seq: 0, hash: null }, [event(5)]);
    expect(row.seq).toBe(1);
    expect(row.prev_hash).toBeNull();
    expect(row.hash).toBe((await sealRow({ ...row }, ring)).hash);
  });
});

describe("personalDataText", () => {
  it("is canonicalize() of the five personal fields, for text, null and anything else", () => {
    const cases = [
      { actor_id: "u_1", actor_name: "Ada \ud83d\ude00 \"x\"", actor_email: "a@b.co", ip_address: "::1", user_agent: "curl/8\n" },
      { actor_id: null, actor_name: null, actor_email: null, ip_address: null, user_agent: null },
      { actor_id: undefined, actor_name: 7, actor_email: null, ip_address: "1.2.3.4", user_agent: null },
    ] as unknown as Parameters<typeof personalDataText>[0][];
    for (const pii of cases) {
      const { actor_email, actor_id, actor_name, ip_address, user_agent } = pii;
      expect(personalDataText(pii)).toBe(canonicalize({ actor_email, actor_id, actor_name, ip_address, user_agent }));
    }
  });
});

describe("columnValues", () => {
  it("lists a row's values in the INSERT's COLUMNS order", async () => {
    const ring = await loadKeyring("1:an-old-signing-key-0123");
    const [row] = await sealEvents(ring, "demo", { seq: 0, hash: null }, [event(7)]);
    // id_indexed, the search columns, append_name and ip_run are storage's, not the event's: id_indexed 1 because the row is
    // alone in its commit (its id index entry is cheaper than a span: migration 0036) and was sent with its own
    // occurred_at, and it carries its append's name; the row's words for its search group, which it starts unless told its
    // lead; ip_run 0, as a lone row keeps its address's index entry (migration 0038), and type_sets 0, as it keeps its target
    // type's (migration 0039), time_in_span 0, as a lone row keeps its time index entry (migration 0040), and action_in_set
    // and org_in_set 0, as it keeps its action and organization index entries (migrations 0041, 0042).
    expect(row.occurred_at).not.toBe(row.received_at);
    const storage: Record<string, unknown> = { id_indexed: 1, search_lead: 0, search_words: searchWords(row).join(" "), append_name: "its-name", ip_run: 0, type_sets: 0, time_in_span: 0, action_in_set: 0, org_in_set: 0 };
    const named = [{ token: "its-name", first: row.seq, last: row.seq }];
    expect(columnValues(row, rowIndexing([row], { appends: named })[0])).toEqual(COLUMNS.map((c) => (c in storage ? storage[c] : row[c as keyof typeof row])));
    // Alone and live (no occurred_at sent): 2, found at its id's instant in the time index (migration 0037), still named.
    const [live] = await sealEvents(ring, "demo", { seq: 0, hash: null }, [event(8)]);
    expect(live.occurred_at).toBe(live.received_at);
    expect(rowIndexing([live], { appends: [{ token: "live", first: 1, last: 1 }] })[0]).toEqual([2, 0, searchWords(live).join(" "), "live", 0, 0, 0, 0, 0]);
    // Two rows of one commit: a sealed row's id carries its received_at, so the commit's span finds them, and names the append.
    const pair = await sealEvents(ring, "demo", { seq: 0, hash: null }, [event(8), event(9)]);
    expect(rowIndexing(pair, { appends: [{ token: "pair", first: 1, last: 2 }] }).map(([idIndexed, , , name]) => [idIndexed, name])).toEqual([[0, null], [0, null]]);
    const unlocated = { ...pair[0], id: crypto.randomUUID() };
    expect(columnValues(unlocated, rowIndexing([unlocated, pair[1]])[0])[COLUMNS.indexOf("id_indexed")]).toBe(1);
    expect(columnValues(row, rowIndexing(Array(6).fill(row))[5])[COLUMNS.indexOf("search_lead")]).toBe(5);
    // Three consecutive rows of one address make a run, found through ip_runs instead of the address's index; two do not.
    const three = await sealEvents(ring, "demo", { seq: 0, hash: null }, [event(1), event(2), event(3)]);
    expect(rowIndexing(three).map((r) => r[4])).toEqual([1, 1, 1]);
    expect(rowIndexing(pair).map((r) => r[4])).toEqual([0, 0]);
    // Three rows whose first target has one type make a set, found through target_type_sets instead of the type's index (bit 1).
    expect(rowIndexing(three).map((r) => r[5])).toEqual([1, 1, 1]);
    expect(rowIndexing(pair).map((r) => r[5])).toEqual([0, 0]);
    // A commit's live rows in its span are in time order through it, with no time index entry (migration 0040); a copy's
    // rows keep theirs, and so do rows sent with an occurred_at of their own.
    const lives = await sealEvents(ring, "demo", { seq: 0, hash: null }, [event(1, { occurred_at: null }), event(2, { occurred_at: "2026-05-05T05:05:05.000Z" }), event(3, { occurred_at: null })]);
    expect(rowIndexing(lives).map((r) => r[6])).toEqual([1, 0, 1]);
    expect(rowIndexing(lives, { copy: true }).map((r) => r[6])).toEqual([0, 0, 0]);
    expect(rowIndexing([lives[0]]).map((r) => r[6])).toEqual([0]);
    // Three live rows of a commit that share an action are its set, with no action index entry (migration 0041); a row of
    // the action with an occurred_at of its own is not, and two live rows are too few.
    const same = (i: number, occurred_at: string | null = null) => event(i, { action: "document.viewed", occurred_at });
    const viewed = await sealEvents(ring, "demo", { seq: 0, hash: null }, [same(1), same(2), same(3, "2026-05-05T05:05:05.000Z"), same(4)]);
    expect(rowIndexing(viewed).map((r) => r[7])).toEqual([1, 1, 0, 1]);
    expect(rowIndexing(viewed, { copy: true }).map((r) => r[7])).toEqual([0, 0, 0, 0]);
    expect(rowIndexing(viewed.slice(0, 2)).map((r) => r[7])).toEqual([0, 0]);
  });
});
