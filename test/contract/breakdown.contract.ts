import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { UsageRangePruned, type LedgerRow, type UsageDetail, type UsageGroup, type UsageRow } from '../../src/domain/ledger.js';
import { breakdownRow, rollUp } from '../helpers/usage-model.js';
import type { UsageDimension } from '../../src/domain/ledger.js';
import type { BackendFactory, Handle } from './backends.js';
import { DAY, eventually, HOUR, row, sleep, T0, unique } from './support.js';

const MINUTE = 60_000;
const GROUPS: UsageGroup[] = ['key', 'team', 'day', 'endpoint'];
const day0 = T0 - 10 * HOUR; // 2026-01-01 00:00 UTC

/** The report `by` as the breakdown's rows summed (what the model's rollUp does, test/helpers/usage-model.ts), ordered by id. */
function summed(detail: readonly UsageDetail[], by: UsageGroup): UsageRow[] {
  const out = new Map<string | null, UsageRow>();
  for (const d of detail) {
    const id = by === 'key' ? d.key_id : by === 'team' ? d.team : by === 'day' ? d.day : d.endpoint;
    const name = by === 'key' ? (d.key_name ?? d.key_id) : id;
    const u = out.get(id) ?? { id, name, requests: 0, cache_hits: 0, credits: 0, credits_saved: 0, unsettled_credits: 0 };
    u.requests += d.requests;
    u.cache_hits += d.cache_hits;
    u.credits += d.credits;
    u.credits_saved += d.credits_saved;
    u.unsettled_credits += d.unsettled_credits;
    out.set(id, u);
  }
  return byId([...out.values()]);
}

const byId = (rows: UsageRow[]) => [...rows].sort((a, b) => (String(a.id) < String(b.id) ? -1 : String(a.id) > String(b.id) ? 1 : 0));

/** The breakdown a ledger of one row per request gives over [from, to): the model. */
function model(rows: readonly LedgerRow[], from: number, to: number, keys: ReadonlyMap<string, { name: string; team: string | null }>): UsageDetail[] {
  const out = new Map<string, UsageDetail>();
  // A request that charged nothing is counted in a group of its minute, key, endpoint and
  // outcome (src/store/usage-tally.ts), which a range holds when the group's earliest request is in it.
  const groupOf = (r: LedgerRow) => `${Math.floor(r.ts / MINUTE)} ${r.keyId} ${r.endpoint} ${r.cache ?? ''} ${r.status} ${r.code ?? ''}`;
  const earliest = new Map<string, number>();
  for (const r of rows) {
    if (r.credits > 0) continue;
    const g = groupOf(r);
    earliest.set(g, Math.min(earliest.get(g) ?? Infinity, r.ts));
  }
  for (const r of rows) {
    const ts = r.credits <= 0 ? earliest.get(groupOf(r))! : r.ts;
    if (ts < from || ts >= to) continue;
    const day = new Date(ts).toISOString().slice(0, 10);
    const id = `${day} ${r.keyId} ${r.endpoint}`;
    const k = keys.get(r.keyId);
    const d = out.get(id) ?? { day, key_id: r.keyId, key_name: k?.name ?? null, team: k?.team ?? null, endpoint: r.endpoint, requests: 0, cache_hits: 0, credits: 0, credits_saved: 0, unsettled_credits: 0 };
    d.requests++;
    if (r.cache === 'HIT' || r.cache === 'STALE') d.cache_hits++;
    d.credits += r.credits;
    d.credits_saved += r.creditsSaved;
    if (r.unsettled) d.unsettled_credits += r.credits;
    out.set(id, d);
  }
  return [...out.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, d]) => d);
}

/** One request: charged (maybe unsettled), a hit, a stale answer or a refusal, of key `k` (of 4 held and one gone). */
const request = fc.record({
    k: fc.nat({ max: 4 }),
    at: fc.nat({ max: 3 * DAY - 1 }),
    kind: fc.constantFrom('miss', 'unsettled', 'hit', 'stale', 'refused'),
    endpoint: fc.constantFrom('profile', 'company', 'profile_posts'),
    n: fc.integer({ min: 1, max: 5 }),
  });

function ledgerRow(keyId: string, ts: number, r: { kind: string; endpoint: string; n: number }): LedgerRow {
  const charged = r.kind === 'miss' || r.kind === 'unsettled';
  return row(keyId, ts, {
    endpoint: r.endpoint,
    cache: r.kind === 'refused' ? null : r.kind === 'hit' ? 'HIT' : r.kind === 'stale' ? 'STALE' : 'MISS',
    status: r.kind === 'refused' ? 429 : 200,
    code: r.kind === 'refused' ? 'RATE_LIMITED' : null,
    credits: charged ? r.n : 0,
    creditsSaved: r.kind === 'hit' || r.kind === 'stale' ? r.n : 0,
    unsettled: r.kind === 'unsettled',
  });
}

/**
 * Ledger.breakdown (README "Usage"): usage per UTC day, key and endpoint, exact as `report` is
 * (daily totals, raw rows, counted groups), so that every report is its rows summed: the
 * dashboard's and the CSV's figures are the JSON report's.
 */
export function breakdownContract(factory: BackendFactory): void {
  describe(`Usage breakdown contract: ${factory.name}`, () => {
    let h: Handle | undefined;
    afterEach(async () => {
      await h?.cleanup();
      h = undefined;
    });

    it('property: over any range, the breakdown is the one-row-per-request model, and summed it is report() for every grouping and rollUp() for any', async () => {
      h = await factory.open({ clock: new FakeClock(T0) });
      const { keys, ledger } = h.backend;
      const other = (await h.peer()).backend.ledger;
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.nat({ max: 4 }), { minLength: 5, maxLength: 5 }),
          fc.array(fc.nat({ max: 3 * DAY }), { minLength: 2, maxLength: 2 }),
          fc.boolean(),
          fc.array(request, { minLength: 1, maxLength: 40 }),
          fc.shuffledSubarray<UsageDimension>(['team', 'key', 'endpoint', 'day']),
          async (teamPick, edges, flushFirst, reqs, by) => {
            // Each run on its own keys and its own stretch of time, so that runs never meet.
            const base = day0 + run++ * 10 * DAY;
            const teams = ['growth', 'Growth', 'data, "ops"', null, null];
            const held = new Map<string, { name: string; team: string | null }>();
            for (const [i, t] of teamPick.slice(0, 4).entries()) {
              const name = unique(`k${i}`);
              const team = teams[t]!;
              held.set((await keys.create({ name, ...(team === null ? {} : { team }) })).key.id, { name, team });
            }
            const ids = [...held.keys(), unique('key_gone')];
            const rows = reqs.map((r) => ledgerRow(ids[r.k]!, base + r.at, r));
            for (const r of rows) await ledger.record(r);
            if (flushFirst) await ledger.flush();
            const [a, b] = [base + Math.min(...edges), base + Math.max(...edges) + 1];
            for (const [from, to] of [[a, b], [base, base + 3 * DAY], [base + DAY, base + 2 * DAY]] as const) {
              const detail = await ledger.breakdown(from, to);
              expect(detail).toEqual(model(rows, from, to, held));
              expect(await other.breakdown(from, to)).toEqual(detail);
              for (const by of GROUPS) expect(summed(detail, by), by).toEqual(byId(await ledger.report(from, to, by)));
              // Summed and ordered by the store: what the model's rollUp (test/helpers/usage-model.ts) makes of the breakdown.
              const rolled = await ledger.rollUp(from, to, by);
              expect(rolled, by.join()).toEqual(rollUp(detail.map(breakdownRow), by));
              expect(await other.rollUp(from, to, by)).toEqual(rolled);
            }
          },
        ),
        { numRuns: factory.name.startsWith('shared') ? 12 : 25 },
      );
    });

    it('counted groups split at minute boundaries as the report splits them; an empty range has no rows', async () => {
      h = await factory.open({ clock: new FakeClock(T0) });
      const ledger = h.backend.ledger;
      const rows = [row('key_a', T0 + 10_000, { creditsSaved: 1 }), row('key_a', T0 + 50_000, { creditsSaved: 2 }), row('key_a', T0 + 70_000, { creditsSaved: 4 })];
      for (const r of rows) await ledger.record(r);
      const saved = async (from: number, to: number) => (await ledger.breakdown(from, to)).reduce((n, d) => n + d.credits_saved, 0);
      expect(await saved(T0, T0 + 20_000)).toBe(3);
      expect(await saved(T0 + 20_000, T0 + 2 * MINUTE)).toBe(4);
      expect(await saved(T0 + 10_001, T0 + 70_000)).toBe(0);
      expect(await ledger.breakdown(T0 + DAY, T0 + 2 * DAY)).toEqual([]);
    });

    it('past ledger.retentionDays pruned days answer from their totals, unchanged, and a range edge inside one is refused as report() refuses it', async () => {
      const clock = new FakeClock(T0);
      h = await factory.open({ clock, ledger: { retentionDays: 1, pruneIntervalMs: 20 } });
      const ledger = h.backend.ledger;
      const g = (await h.backend.keys.create({ name: 'g', team: 'growth' })).key.id;
      const rows = Array.from({ length: 32 }, (_, i) =>
        ledgerRow(i % 3 ? g : 'key_gone', day0 + i * 3 * HOUR + 7, { kind: ['miss', 'hit', 'unsettled', 'refused', 'stale'][i % 5]!, endpoint: i % 2 ? 'profile' : 'company', n: 1 + (i % 3) }),
      );
      for (const r of rows) await ledger.record(r);
      const whole = await ledger.breakdown(day0, day0 + 4 * DAY);
      expect(whole).toEqual(model(rows, day0, day0 + 4 * DAY, new Map([[g, { name: 'g', team: 'growth' }]])));
      clock.set(day0 + 4 * DAY + HOUR);
      const refused = await eventually(() => ledger.breakdown(day0 + HOUR, day0 + 4 * DAY).then(() => null, (err: unknown) => err), (e) => e !== null, 5_000);
      expect(refused).toBeInstanceOf(UsageRangePruned);
      await sleep(100); // a few more passes
      expect(await ledger.breakdown(day0, day0 + 4 * DAY)).toEqual(whole);
      for (const by of GROUPS) expect(summed(whole, by)).toEqual(byId(await ledger.report(day0, day0 + 4 * DAY, by)));
      expect(await ledger.rollUp(day0, day0 + 4 * DAY, ['day', 'team', 'key'])).toEqual(rollUp(whole.map(breakdownRow), ['day', 'team', 'key']));
      await expect(ledger.rollUp(day0 + HOUR, day0 + 4 * DAY, ['team'])).rejects.toBeInstanceOf(UsageRangePruned);
    });

    it('rollUpPages: rollUp in pages of at most pageRows, none empty; a reader that stops early frees the read, however often', async () => {
      h = await factory.open({ clock: new FakeClock(T0) });
      const { keys, ledger } = h.backend;
      const k = (await keys.create({ name: unique('pages') })).key.id;
      for (let d = 0; d < 11; d++) await ledger.record(row(k, T0 + d * DAY + 5, { credits: d + 1, cache: 'MISS' }));
      const [from, to, by] = [T0, T0 + 12 * DAY, ['day', 'key'] as UsageDimension[]];
      const whole = await ledger.rollUp(from, to, by);
      expect(whole).toHaveLength(11);
      const read = async (pageRows: number) => {
        const pages: unknown[][] = [];
        for await (const page of ledger.rollUpPages(from, to, by, pageRows)) pages.push(page);
        return pages;
      };
      expect((await read(3)).map((p) => p.length)).toEqual([3, 3, 3, 2]);
      expect((await read(3)).flat()).toEqual(whole);
      expect(await read(11)).toEqual([whole]);
      for (const bad of [0, -1, 1.5, Number.NaN, 2 ** 31]) await expect(read(bad), String(bad)).rejects.toThrow(RangeError);
      for await (const _ of ledger.rollUpPages(T0 + 20 * DAY, T0 + 21 * DAY, by, 3)) expect.fail('a range where nothing was used has no page');
      // More early stops than a pool holds connections: a read that kept its connection (or its
      // cursor) would leave the next ones waiting, and this rollUp with them.
      for (let i = 0; i < 12; i++) {
        for await (const page of ledger.rollUpPages(from, to, by, 2)) {
          expect(page).toEqual(whole.slice(0, 2));
          break;
        }
      }
      expect(await ledger.rollUp(from, to, by)).toEqual(whole);
    });

    it('rollUp of a range where nothing was used has no row, not a row of nulls, whatever the grouping', async () => {
      h = await factory.open({ clock: new FakeClock(T0) });
      for (const by of [[], ['team'], ['day', 'key']] as UsageDimension[][]) expect(await h.backend.ledger.rollUp(T0 + DAY, T0 + 2 * DAY, by)).toEqual([]);
      await h.backend.ledger.record(row('key_a', T0 + DAY + 5, { credits: 3, cache: 'MISS' }));
      expect(await h.backend.ledger.rollUp(T0 + DAY, T0 + 2 * DAY, [])).toEqual([{ day: null, team: null, key_id: null, key_name: null, endpoint: null, requests: 1, cache_hits: 0, credits: 3, credits_saved: 0 }]);
    });
  });
}
