import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor, type Cursor } from "../../src/model/cursor";
import { armGrace, armGrowing, ARM_LEAD_MS, listOrder, markedSpans, marksMatter, pageOverSpans, PERIOD_MS, type Arm, type ArmSpan, type ListPage, type Listed } from "../../src/model/periods";

/** A small deterministic generator, so a failing case can be read again. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

const at = (minute: number) => new Date(Date.UTC(2026, 0, 1) + minute * 60_000).toISOString();

/** After `c` in list order (a bare instant: the rows below it). */
const after = (r: Listed, c: Cursor | null) => c === null || r.occurred_at < c.occurredAt || (r.occurred_at === c.occurredAt && c.seq !== null && r.seq < c.seq);

/** An arm's page as a real one answers: its first `limit` rows after the cursor, or fewer where its walk's budget (`budget` rows looked at) ran out first. */
function armPage(rows: Listed[], c: Cursor | null, limit: number, budget: number): ListPage {
  const next = rows.filter((r) => after(r, c)).sort(listOrder);
  if (next.length > budget && budget < limit) {
    const stop = next[budget - 1];
    return { rows: next.slice(0, budget).filter((r) => r.seq % 3 !== 0), nextCursor: encodeCursor(stop.occurred_at, stop.seq) };
  }
  const page = next.slice(0, limit);
  return { rows: page, nextCursor: next.length > limit ? encodeCursor(page[limit - 1].occurred_at, page[limit - 1].seq) : null };
}

/** A growing main arm and three settled periods of a hundred minutes each, and the rows each holds: 1 in the oldest, 2, then 1. */
function threeArms(): { spans: ArmSpan[]; held: Map<Arm, Listed[]> } {
  const spans: ArmSpan[] = [
    { arm: null, hi: null, lo: null, growing: true },
    { arm: 1, hi: at(199), lo: at(100), growing: false },
    { arm: 2, hi: at(299), lo: at(200), growing: false },
    { arm: 3, hi: at(399), lo: at(300), growing: false },
  ];
  const held = new Map<Arm, Listed[]>([
    [null, []],
    [1, [{ occurred_at: at(150), seq: 2 }]],
    [2, [{ occurred_at: at(250), seq: 4 }, { occurred_at: at(220), seq: 3 }]],
    [3, [{ occurred_at: at(350), seq: 6 }]],
  ]);
  return { spans, held };
}

/** A read of each arm's page of `held` after a cursor, recording the arms each read takes. */
function recording(held: Map<Arm, Listed[]>) {
  const read: Arm[][] = [];
  const reader = (c: Cursor | null, limit: number) => (arms: Arm[]) => (read.push(arms), Promise.resolve(arms.map((a) => armPage(held.get(a)!, c, limit, Infinity))));
  return { read, reader };
}

describe("pageOverSpans: a page from the arms that can hold it", () => {
  it("walks every row of every arm once, in list order, reading settled arms only where the page reaches them", async () => {
    for (let seed = 1; seed <= 60; seed++) {
      const rnd = random(seed);
      // Arms of rows in time order, as periods fill (each a stretch of minutes), some backdated rows among them
      // (anywhere below their period's stretch),
      // a growing main arm and a growing newest period, and settled arms with no row of the project.
      const arms: Arm[] = [null, 1, 2, 3, 4, 5, 6];
      const rows = new Map<Arm, Listed[]>(arms.map((a) => [a, []]));
      let seq = 0;
      for (const arm of [1, 2, 4, 5, 6] as Arm[]) {
        const n = Math.floor(rnd() * 12);
        for (let i = 0; i < n; i++) {
          const backdated = rnd() < 0.15;
          const minute = backdated ? Math.floor(rnd() * (arm as number) * 100) : (arm as number) * 100 + Math.floor(rnd() * 100);
          rows.get(arm)!.push({ occurred_at: at(minute), seq: ++seq });
        }
      }
      for (let i = 0; i < Math.floor(rnd() * 4); i++) rows.get(null)!.push({ occurred_at: at(Math.floor(rnd() * 700)), seq: ++seq });
      const graced = rnd() < 0.5;
      const spans: ArmSpan[] = arms.map((arm) => {
        const list = rows.get(arm)!;
        // Period 5 is sometimes last week's, past its end and in its grace: growing, but no row above its ceiling.
        const grace = arm === 5 && graced;
        const growing = arm === null || arm === 6 || grace;
        const times = list.map((r) => r.occurred_at).sort();
        // A growing arm's reading is no bound above; a settled arm's may be wider than its rows (rows deleted since).
        // The current period may have held rows from anywhere when read (heldFrom): it only chooses the first read.
        // Half the time it knows its lowest occurred_at (from: its span's and mark's least, at or below its rows',
        // or null when it holds none).
        if (grace) {
          const lowest = times.length === 0 ? null : rnd() < 0.5 ? times[0] : at(Math.floor(rnd() * (Date.parse(times[0]) - Date.parse(at(0))) / 60_000));
          return { arm, hi: null, lo: null, growing, ...(rnd() < 0.7 ? { from: lowest } : {}), ...(lowest !== null && rnd() < 0.5 ? { heldFrom: lowest } : {}), ceiling: at(600 + Math.floor(rnd() * 7)) };
        }
        if (growing) {
          const lowest = times.length === 0 ? null : rnd() < 0.5 ? times[0] : at(Math.floor(rnd() * (Date.parse(times[0]) - Date.parse(at(0))) / 60_000));
          const from = arm === 6 && rnd() < 0.5 ? { from: lowest } : {};
          return { arm, hi: null, lo: null, growing, ...from, ...(arm === 6 && rnd() < 0.5 ? { heldFrom: at(Math.floor(rnd() * 700)) } : {}) };
        }
        if (list.length === 0) return { arm, hi: null, lo: null, growing };
        return { arm, hi: rnd() < 0.2 ? at(800) : times[times.length - 1], lo: times[0], growing };
      });
      // Some walks ask for a stretch of time (date_from and date_to, inclusive), which the arms' reads apply themselves.
      const dated = rnd() < 0.4;
      const within = dated ? { dateFrom: rnd() < 0.7 ? at(Math.floor(rnd() * 400)) : null, dateTo: rnd() < 0.7 ? at(300 + Math.floor(rnd() * 400)) : null } : undefined;
      const inWithin = (r: Listed) => within === undefined || ((within.dateFrom === null || r.occurred_at >= within.dateFrom) && (within.dateTo === null || r.occurred_at <= within.dateTo));
      const all = [...rows.values()].flat().filter(inWithin).sort(listOrder);
      for (const limit of [1, 2, 5, 50]) {
        const budget = rnd() < 0.3 ? 1 + Math.floor(rnd() * 3) : Infinity;
        // How many settled arms from the top the first read takes (a filtered list takes two).
        const reach = 1 + Math.floor(rnd() * 3);
        // Half the walks keep what each page needed (ReachMemory), as a filter's pages do one after another.
        const memory = rnd() < 0.5 ? { more: 0, learn(n: number) { this.more = n; } } : undefined;
        const listed: Listed[] = [];
        let cursor: Cursor | null = null;
        for (let pages = 0; ; pages++) {
          expect(pages, `seed ${seed}, limit ${limit}: the walk ends`).toBeLessThan(500);
          const seen: Arm[] = [];
          const page = await pageOverSpans(spans, cursor, limit, async (read) => {
            expect(read.filter((a) => seen.includes(a)), "a page reads an arm once").toEqual([]);
            seen.push(...read);
            expect(read.every((a) => rows.get(a)!.length > 0 || a === null || (spans.find((x) => x.arm === a)!.growing && spans.find((x) => x.arm === a)!.from !== null)), "an arm with no row of the project is never read").toBe(true);
            const from = spans[6].from;
            expect(read.includes(6) && from != null && cursor !== null && from > cursor.occurredAt, "a growing period is not read below its lowest").toBe(false);
            const outside = (a: Arm) => {
              const span = spans.find((x) => x.arm === a)!;
              return !span.growing && within !== undefined && ((within.dateTo !== null && span.lo! > within.dateTo) || (within.dateFrom !== null && span.hi! < within.dateFrom));
            };
            expect(read.filter(outside), "a settled arm whose span lies outside the dates asked for is never read").toEqual([]);
            return read.map((a) => armPage(rows.get(a)!.filter(inWithin), cursor, limit, budget));
          }, within, reach, memory);
          expect(page.rows.length).toBeLessThanOrEqual(limit);
          listed.push(...page.rows);
          if (page.nextCursor === null) break;
          cursor = decodeCursor(page.nextCursor);
        }
        // The budget's walks leave out rows whose seq is a multiple of 3 where they stopped early, as a filter would.
        const want = budget === Infinity ? all : null;
        if (want) expect(listed.map((r) => r.seq), `seed ${seed}, limit ${limit}, reach ${reach}`).toEqual(want.map((r) => r.seq));
        else {
          expect(new Set(listed.map((r) => r.seq)).size, `seed ${seed}, limit ${limit}: no row twice`).toBe(listed.length);
          expect([...listed].sort(listOrder), `seed ${seed}, limit ${limit}: in list order`).toEqual(listed);
          for (const r of all) if (r.seq % 3 !== 0) expect(listed, `seed ${seed}, limit ${limit}: seq ${r.seq} listed`).toContainEqual(r);
        }
      }
    }
  });

  it("reads the newest settled arm and the growing ones for a first page, and no older arm once they fill it", async () => {
    const spans: ArmSpan[] = [
      { arm: null, hi: null, lo: null, growing: true },
      { arm: 1, hi: at(199), lo: at(100), growing: false },
      { arm: 2, hi: at(299), lo: at(200), growing: false },
      { arm: 3, hi: null, lo: null, growing: false },
      { arm: 4, hi: null, lo: null, growing: true },
    ];
    const read: Arm[][] = [];
    const full = (arms: Arm[]) => (read.push(arms), Promise.resolve(arms.map((a) => (a === 2 ? { rows: [{ occurred_at: at(299), seq: 9 }, { occurred_at: at(298), seq: 8 }], nextCursor: encodeCursor(at(298), 8) } : { rows: [], nextCursor: null }))));
    const page = await pageOverSpans(spans, null, 2, full);
    expect(read).toEqual([[null, 2, 4]]);
    expect(page.rows.map((r) => r.seq)).toEqual([9, 8]);
    // A cursor inside arm 1 reads it with the growing arms, and not arm 2, which holds nothing that low.
    read.length = 0;
    await pageOverSpans(spans, { occurredAt: at(150), seq: null }, 2, full);
    expect(read).toEqual([[null, 1, 4]]);
    // A growing period whose rows all lie above the cursor (its lowest occurred_at: from) is not read, nor one
    // known to hold none; above its lowest, it is.
    read.length = 0;
    spans[4] = { arm: 4, hi: null, lo: null, growing: true, from: at(160) };
    await pageOverSpans(spans, { occurredAt: at(150), seq: null }, 2, full);
    await pageOverSpans(spans, { occurredAt: at(170), seq: null }, 2, full);
    spans[4] = { arm: 4, hi: null, lo: null, growing: true, from: null };
    await pageOverSpans(spans, null, 2, full);
    expect(read).toEqual([[null, 1], [null, 1, 4], [null, 2]]);
  });

  it("goes on in the next arm down when the first ran out having found rows, and in every arm left when it found none, telling the read they ran out", async () => {
    const { spans, held } = threeArms();
    const read: Arm[][] = [];
    const told: boolean[] = [];
    const reader = (c: Cursor | null) => (arms: Arm[], ranOut: boolean) => {
      read.push(arms);
      told.push(ranOut);
      return Promise.resolve(arms.map((a) => armPage(held.get(a)!, c, 3, Infinity)));
    };
    // Arm 3 gives one row of three: arm 2 is read for the rest, not arm 1, which bounds the page. The read of arm 2
    // is told the arms before ran out: what it looks for is rare (a search asks FTS5 first).
    const page = await pageOverSpans(spans, null, 3, reader(null));
    expect(read).toEqual([[null, 3], [2]]);
    expect(told).toEqual([false, true]);
    expect(page.rows.map((r) => r.seq)).toEqual([6, 4, 3]);
    expect(page.nextCursor).toBe(`${at(199)}~999999999999999`);
    read.length = 0;
    const next = await pageOverSpans(spans, decodeCursor(page.nextCursor!), 3, reader(decodeCursor(page.nextCursor!)));
    expect(read).toEqual([[null, 1]]);
    expect(next).toEqual({ rows: [{ occurred_at: at(150), seq: 2 }], nextCursor: null });
    // Nothing in arm 3 for a filter: every arm left is read at once.
    held.set(3, []);
    read.length = 0;
    told.length = 0;
    expect((await pageOverSpans(spans, null, 3, reader(null))).rows.map((r) => r.seq)).toEqual([4, 3, 2]);
    expect(read).toEqual([[null, 3], [1, 2]]);
    expect(told).toEqual([false, true]);
    // Arm 3 fills the page and stops inside arm 2's stretch: arm 2 is read for the rows it holds up there, not told
    // they ran out (the term is common).
    held.set(3, [{ occurred_at: at(399), seq: 10 }, { occurred_at: at(398), seq: 9 }, { occurred_at: at(397), seq: 8 }, { occurred_at: at(396), seq: 7 }]);
    spans[2] = { arm: 2, hi: at(398), lo: at(200), growing: false };
    read.length = 0;
    told.length = 0;
    expect((await pageOverSpans(spans, null, 3, reader(null))).rows.map((r) => r.seq)).toEqual([10, 9, 8]);
    expect(read).toEqual([[null, 3], [2]]);
    expect(told).toEqual([false, false]);
  });

  it("takes the next settled arm down in the first read when asked to reach two, so a rare filter's page is one round trip", async () => {
    const { spans, held } = threeArms();
    const read: Arm[][] = [];
    const reader = (c: Cursor | null) => (arms: Arm[]) => (read.push(arms), Promise.resolve(arms.map((a) => armPage(held.get(a)!, c, 3, Infinity))));
    // Arm 3 holds one row of three, arm 2 the other two: one read. The page is full though both ran out: it ends at
    // its last row (arm 1 lies below it), and the next page reads arm 1 (and arm 2, which reaches the cursor).
    const page = await pageOverSpans(spans, null, 3, reader(null), undefined, 2);
    expect(read).toEqual([[null, 2, 3]]);
    expect(page.rows.map((r) => r.seq)).toEqual([6, 4, 3]);
    expect(page.nextCursor).toBe(`${at(220)}~3`);
    read.length = 0;
    const next = await pageOverSpans(spans, decodeCursor(page.nextCursor!), 3, reader(decodeCursor(page.nextCursor!)), undefined, 2);
    expect(read).toEqual([[null, 1, 2]]);
    expect(next).toEqual({ rows: [{ occurred_at: at(150), seq: 2 }], nextCursor: null });
    // Fewer than a page in both: arm 1, the next down, in a second read; the walk ends there.
    read.length = 0;
    const longer = await pageOverSpans(spans, null, 5, (arms) => (read.push(arms), Promise.resolve(arms.map((a) => armPage(held.get(a)!, null, 5, Infinity)))), undefined, 2);
    expect(read).toEqual([[null, 2, 3], [1]]);
    expect(longer).toEqual({ rows: [6, 4, 3, 2].map((seq) => [...held.values()].flat().find((r) => r.seq === seq)), nextCursor: null });
  });

  it("reads at once as many settled arms more as the filter's last page needed, and no more once a page fills from its first read", async () => {
    const { spans, held } = threeArms();
    const read: Arm[][] = [];
    const reader = (arms: Arm[]) => (read.push(arms), Promise.resolve(arms.map((a) => armPage(held.get(a)!, null, 3, Infinity))));
    const learned: number[] = [];
    const memory = { more: 0, learn: (n: number) => (learned.push(n), (memory.more = n)) };
    // A rare filter: arm 3 holds one row of the page, arm 2 the rest, found in a second read; the page needed one
    // settled arm more than its first read took.
    const page = await pageOverSpans(spans, null, 3, reader, undefined, 1, memory);
    expect(read).toEqual([[null, 3], [2]]);
    expect(learned).toEqual([1]);
    // The same page again (a console polling it, the next client): both arms in the first read, one round trip, the
    // same rows. The page is full though both ran out: it ends at its last row.
    read.length = 0;
    const again = await pageOverSpans(spans, null, 3, reader, undefined, 1, memory);
    expect(read).toEqual([[null, 2, 3]]);
    expect(again.rows).toEqual(page.rows);
    expect(again.nextCursor).toBe(`${at(220)}~3`);
    // The filter's rows grow common: arm 3 fills the page alone. It reads two arms once more, then learns none more.
    held.set(3, [{ occurred_at: at(399), seq: 10 }, { occurred_at: at(398), seq: 9 }, { occurred_at: at(397), seq: 8 }]);
    read.length = 0;
    await pageOverSpans(spans, null, 3, reader, undefined, 1, memory);
    await pageOverSpans(spans, null, 3, reader, undefined, 1, memory);
    expect(read).toEqual([[null, 2, 3], [null, 3]]);
    expect(learned).toEqual([1, 1, 0, 0]);
    // A page with no row teaches nothing.
    held.set(3, []).set(2, []).set(1, []);
    await pageOverSpans(spans, null, 3, reader, undefined, 1, memory);
    expect(learned).toEqual([1, 1, 0, 0]);
  });

  it("reads a current period that holds rows from below the page's start without a settled arm, unless asked to reach two", async () => {
    const { spans, held } = threeArms();
    // Period 4 is the current one, past its first hour: it held rows from minute 400 up when its span was read.
    spans.push({ arm: 4, hi: null, lo: null, growing: true, heldFrom: at(400) });
    held.set(4, [{ occurred_at: at(450), seq: 9 }, { occurred_at: at(440), seq: 8 }, { occurred_at: at(430), seq: 7 }]);
    const { read, reader } = recording(held);
    // It fills a page of 3: period 3's rows are not read for nothing.
    expect((await pageOverSpans(spans, null, 3, reader(null, 3))).rows.map((r) => r.seq)).toEqual([9, 8, 7]);
    expect(read).toEqual([[null, 4]]);
    // A page of 5 runs out in it: the next arm down is read for the rest, as after a settled arm, and the page ends
    // above the one below that, unread.
    read.length = 0;
    const short = await pageOverSpans(spans, null, 5, reader(null, 5));
    expect(short.rows.map((r) => r.seq)).toEqual([9, 8, 7, 6]);
    expect(short.nextCursor).toBe(`${at(299)}~999999999999999`);
    expect(read).toEqual([[null, 4], [3]]);
    // An actor's page reaches two: the current period and the newest settled one, in one read.
    read.length = 0;
    await pageOverSpans(spans, null, 3, reader(null, 3), undefined, 2);
    expect(read).toEqual([[null, 3, 4]]);
    // A page starting below every row it held (a cursor, or date_to, in an older period): it does not count.
    read.length = 0;
    const cursor = { occurredAt: at(360), seq: null };
    expect((await pageOverSpans(spans, cursor, 3, reader(cursor, 3))).rows.map((r) => r.seq)).toEqual([6, 4, 3]);
    expect(read).toEqual([[null, 3, 4], [2]]);
    read.length = 0;
    await pageOverSpans(spans, null, 3, reader(null, 3), { dateFrom: null, dateTo: at(380) });
    expect(read).toEqual([[null, 3, 4]]);
    // A current period that held no row of the project when read (no heldFrom) reads with the newest settled arm.
    spans[4] = { arm: 4, hi: null, lo: null, growing: true };
    read.length = 0;
    await pageOverSpans(spans, null, 3, reader(null, 3));
    expect(read).toEqual([[null, 3, 4]]);
  });

  it("reads last week's period, growing in its grace, only where a page reaches below its ceiling, as a settled arm", async () => {
    const { spans, held } = threeArms();
    // A week's first day: period 4 ended at minute 500 and still takes commits (its grace), none of whose rows can
    // lie above its ceiling; period 5, the current one, holds rows from minute 510 up.
    spans.push({ arm: 4, hi: null, lo: null, growing: true, from: at(400), heldFrom: at(400), ceiling: at(506) });
    spans.push({ arm: 5, hi: null, lo: null, growing: true, from: at(510), heldFrom: at(510) });
    held.set(4, [{ occurred_at: at(480), seq: 8 }, { occurred_at: at(470), seq: 7 }]);
    held.set(5, [{ occurred_at: at(530), seq: 11 }, { occurred_at: at(520), seq: 10 }, { occurred_at: at(515), seq: 9 }]);
    const { read, reader } = recording(held);
    // The current period fills a page of 3 above the ceiling: last week's period is not read.
    expect((await pageOverSpans(spans, null, 3, reader(null, 3))).rows.map((r) => r.seq)).toEqual([11, 10, 9]);
    expect(read).toEqual([[null, 5]]);
    // A page of 4 runs out in it: last week's period is the next arm down, and the page ends above period 3, unread.
    read.length = 0;
    const short = await pageOverSpans(spans, null, 4, reader(null, 4));
    expect(short.rows.map((r) => r.seq)).toEqual([11, 10, 9, 8]);
    expect(short.nextCursor).toBe(`${at(480)}~8`);
    expect(read).toEqual([[null, 5], [4]]);
    // Every row once, page by page, as reading every arm does.
    const listed: number[] = [];
    for (let c: Cursor | null = null, pages = 0; pages < 20; pages++) {
      const page = await pageOverSpans(spans, c, 2, reader(c, 2));
      listed.push(...page.rows.map((r) => r.seq));
      if (page.nextCursor === null) break;
      c = decodeCursor(page.nextCursor);
    }
    expect(listed).toEqual([11, 10, 9, 8, 7, 6, 4, 3, 2]);
    // An actor's page reaches two: the current period and last week's, ranked as the newest settled arm.
    read.length = 0;
    await pageOverSpans(spans, null, 3, reader(null, 3), undefined, 2);
    expect(read).toEqual([[null, 4, 5]]);
    // The current period in its first hour (no heldFrom): last week's period is the settled arm its first read takes.
    spans[5] = { arm: 5, hi: null, lo: null, growing: true, from: at(510) };
    read.length = 0;
    await pageOverSpans(spans, null, 3, reader(null, 3));
    expect(read).toEqual([[null, 4, 5]]);
    // A cursor below the current period's rows: last week's period is read up to it, with nothing newer.
    read.length = 0;
    const cursor = { occurredAt: at(490), seq: null };
    expect((await pageOverSpans(spans, cursor, 3, reader(cursor, 3))).rows.map((r) => r.seq)).toEqual([8, 7, 6]);
    expect(read).toEqual([[null, 4], [3]]);
    // Dates from above its ceiling: it holds none of them.
    read.length = 0;
    await pageOverSpans(spans, null, 3, reader(null, 3), { dateFrom: at(508), dateTo: null });
    expect(read).toEqual([[null, 5]]);
    // Where its lowest is not known (a reader that cannot see the marks), a page that runs out there reads every
    // arm below with it.
    spans[4] = { arm: 4, hi: null, lo: null, growing: true, ceiling: at(506) };
    spans[5] = { arm: 5, hi: null, lo: null, growing: true, from: at(510), heldFrom: at(510) };
    read.length = 0;
    expect((await pageOverSpans(spans, null, 6, reader(null, 6))).rows.map((r) => r.seq)).toEqual([11, 10, 9, 8, 7, 6]);
    expect(read).toEqual([[null, 5], [1, 2, 3, 4]]);
  });

  it("counts a period as growing from a minute before its start till its grace after its end", () => {
    const week = PERIOD_MS;
    const start = 2950 * week;
    expect(armGrowing(2950, start - ARM_LEAD_MS - 30_001, 30_000, week)).toBe(false);
    expect(armGrowing(2950, start - ARM_LEAD_MS - 30_000, 30_000, week)).toBe(true);
    expect(armGrowing(2950, start + week + armGrace(week), 30_000, week)).toBe(true);
    expect(armGrowing(2950, start + week + armGrace(week) + 1, 30_000, week)).toBe(false);
    expect(armGrace(week)).toBe(24 * 3600 * 1000);
    expect(armGrace(120_000)).toBe(2 * ARM_LEAD_MS);
  });

  it("takes the spans as the marks a read finds say: main tables once marked, a growing period down to its mark, and every arm that may grow for a reader that cannot see them", () => {
    const spans: ArmSpan[] = [
      { arm: null, hi: at(50), lo: at(10), growing: false },
      { arm: 1, hi: at(199), lo: at(100), growing: false },
      { arm: 2, hi: null, lo: null, growing: true, from: at(250) },
      { arm: 3, hi: null, lo: null, growing: true, from: null },
    ];
    expect(marksMatter(spans)).toBe(true);
    // Marks that say nothing new: the same spans, kept as they are.
    expect(markedSpans(spans, { main: false, lows: { "2": at(250) } })).toBe(spans);
    expect(markedSpans(spans, { main: false, lows: { "2": at(260), "1": at(0) } })).toBe(spans);
    // A commit to the main tables, one below period 2's lowest and a first one in period 3: each as it says.
    expect(markedSpans(spans, { main: true, lows: { "2": at(240), "3": at(300) } })).toEqual([
      { arm: null, hi: at(50), lo: at(10), growing: true },
      spans[1],
      { arm: 2, hi: null, lo: null, growing: true, from: at(240) },
      { arm: 3, hi: null, lo: null, growing: true, from: at(300) },
    ]);
    // A reader that cannot see the marks reads the main tables and every growing period, whatever they held.
    expect(markedSpans(spans, null)).toEqual([
      { arm: null, hi: at(50), lo: at(10), growing: true },
      spans[1],
      { arm: 2, hi: null, lo: null, growing: true },
      { arm: 3, hi: null, lo: null, growing: true },
    ]);
    // Without a settled main tables or a bounded growing period, no mark can change a page.
    expect(marksMatter([{ arm: null, hi: null, lo: null, growing: true }, spans[1], { arm: 2, hi: null, lo: null, growing: true }])).toBe(false);
  });
});
