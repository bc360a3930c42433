import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import type { LedgerRow, UsageRow } from '../../src/domain/ledger.js';
import type { BackendFactory, Handle } from './backends.js';
import { DAY, eventually, HOUR, row, sleep, sumPerGroup, T0 } from './support.js';

const MINUTE = 60_000;

/**
 * The team report a ledger of one row per request would give over [from, to), each key's usage
 * counted for `teamOf(key)` (null: no team): most credits first, then most requests, then the
 * name compared by code unit (byte order for these names), the no-team group last on a tie.
 */
export function teamModel(rows: readonly LedgerRow[], from: number, to: number, teamOf: (keyId: string) => string | null): UsageRow[] {
  const byName = (a: string | null, b: string | null) => (a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1);
  return sumPerGroup(rows, from, to, (r) => teamOf(r.keyId)).sort((a, b) => b.credits - a.credits || b.requests - a.requests || byName(a.id, b.id));
}

/**
 * Usage by team on every backend (README "Usage"): a key's usage counts for its current team
 * (api_keys.owner; the ledger carries only key ids), keys without one and key ids no longer held
 * form the null group, and the report is exact whichever way the requests are held: raw charged
 * rows, counted groups of zero-credit requests (usage_minute) or a pruned day's totals.
 */
export function teamUsageContract(factory: BackendFactory): void {
  describe(`Usage by team contract: ${factory.name}`, () => {
    let h: Handle | undefined;
    afterEach(async () => {
      await h?.cleanup();
      h = undefined;
    });
    const day0 = T0 - 10 * HOUR; // 2026-01-01 00:00 UTC

    /** Four keys: two of 'Growth', one of 'data', one of no team; plus a key id no longer held. */
    async function keysOf(handle: Handle) {
      const k = handle.backend.keys;
      const g1 = (await k.create({ name: 'g1', team: 'Growth' })).key.id;
      const g2 = (await k.create({ name: 'g2', team: 'Growth' })).key.id;
      const d = (await k.create({ name: 'd', team: 'data' })).key.id;
      const none = (await k.create({ name: 'none' })).key.id;
      const teams = new Map<string, string | null>([[g1, 'Growth'], [g2, 'Growth'], [d, 'data'], [none, null]]);
      return { g1, g2, d, none, gone: 'key_gone', teams, teamOf: (id: string) => teams.get(id) ?? null };
    }

    /** Every 3 hours over `days` days, round the five keys: misses (some unsettled), refusals, hits and stale answers. */
    const history = (ids: readonly string[], days: number): LedgerRow[] =>
      Array.from({ length: (days * 24) / 3 }, (_, i) =>
        row(ids[i % ids.length]!, day0 + i * 3 * HOUR + (i % 5) * MINUTE + 7, {
          endpoint: i % 3 ? 'profile' : 'company',
          cache: i % 4 === 0 ? 'HIT' : i % 4 === 1 ? 'STALE' : i % 4 === 2 ? 'MISS' : null,
          status: i % 4 === 3 ? 429 : 200,
          code: i % 4 === 3 ? 'RATE_LIMITED' : null,
          credits: i % 4 === 2 ? 1 + (i % 3) : 0,
          creditsSaved: i % 4 < 2 ? 1 + (i % 2) : 0,
          unsettled: i % 4 === 2 && i % 3 === 1,
        }),
      );

    it('per current team, no team and unknown keys as null, exact over raw rows and counted groups, partial and whole days; a key moving team moves its usage', async () => {
      h = await factory.open({ clock: new FakeClock(T0) });
      const ledger = h.backend.ledger;
      const k = await keysOf(h);
      const rows = history([k.g1, k.d, k.none, k.g2, k.gone], 4);
      for (const r of rows.slice(0, 20)) await ledger.record(r);
      // Before a flush (the report flushes first) and after it.
      expect(await ledger.report(day0, day0 + 4 * DAY, 'team')).toEqual(teamModel(rows.slice(0, 20), day0, day0 + 4 * DAY, k.teamOf));
      for (const r of rows.slice(20)) await ledger.record(r);
      await ledger.flush();
      const ranges: Array<[number, number]> = [[day0, day0 + 4 * DAY], [day0 + 5 * HOUR, day0 + 2 * DAY + 7 * HOUR], [day0 + DAY, day0 + DAY + 2 * MINUTE], [T0 + 9 * DAY, T0 + 10 * DAY]];
      const other = (await h.peer()).backend.ledger;
      for (const [a, b] of ranges) {
        expect(await ledger.report(a, b, 'team'), `${a}-${b}`).toEqual(teamModel(rows, a, b, k.teamOf));
        expect(await other.report(a, b, 'team')).toEqual(await ledger.report(a, b, 'team'));
      }
      const all = await ledger.report(day0, day0 + 4 * DAY, 'team');
      expect(all.map((u) => u.id).sort()).toEqual(['Growth', 'data', null].sort());
      // The team totals are the key totals summed: nothing lost or counted twice.
      const sum = (us: UsageRow[]) => us.reduce((n, u) => [n[0]! + u.requests, n[1]! + u.credits, n[2]! + u.credits_saved, n[3]! + u.unsettled_credits], [0, 0, 0, 0]);
      expect(sum(all)).toEqual(sum(await ledger.report(day0, day0 + 4 * DAY, 'key')));

      await h.backend.keys.update(k.d, { team: 'Growth' });
      await h.backend.keys.update(k.none, { team: 'tollgate demo' });
      k.teams.set(k.d, 'Growth').set(k.none, 'tollgate demo');
      expect(await ledger.report(day0, day0 + 4 * DAY, 'team')).toEqual(teamModel(rows, day0, day0 + 4 * DAY, k.teamOf));
    });

    it('a tie in credits and requests lists teams by name byte-wise, the no-team group last, on both backends alike', async () => {
      h = await factory.open({ clock: new FakeClock(T0) });
      const keys = h.backend.keys;
      const names = ['zeta', 'Zeta', 'alpha beta', 'alpha', null];
      const ids: string[] = [];
      for (const [i, team] of names.entries()) ids.push((await keys.create({ name: `k${i}`, ...(team === null ? {} : { team }) })).key.id);
      for (const [i, id] of ids.entries()) await h.backend.ledger.record(row(id, T0 + i, { cache: 'MISS', credits: 2 }));
      const report = await h.backend.ledger.report(T0, T0 + DAY, 'team');
      expect(report.map((u) => u.id)).toEqual(['Zeta', 'alpha', 'alpha beta', 'zeta', null]);
      expect(report.every((u) => u.name === u.id && u.requests === 1 && u.credits === 2)).toBe(true);
    });

    it('past ledger.retentionDays the pruned days answer by team from their daily totals, unchanged', async () => {
      const clock = new FakeClock(T0);
      h = await factory.open({ clock, ledger: { retentionDays: 1, pruneIntervalMs: 20 } });
      const ledger = h.backend.ledger;
      const k = await keysOf(h);
      const rows = history([k.g1, k.d, k.none, k.g2, k.gone], 4);
      for (const r of rows) await ledger.record(r);
      await ledger.flush();
      const wholeDays: Array<[number, number]> = [[day0, day0 + 4 * DAY], [day0 + DAY, day0 + 3 * DAY], [day0, day0 + DAY]];
      for (const [a, b] of wholeDays) expect(await ledger.report(a, b, 'team')).toEqual(teamModel(rows, a, b, k.teamOf));
      // Day 4, 01:00: with 1 day kept raw, days 0–2 are pruned to their totals at the next pass.
      clock.set(day0 + 4 * DAY + HOUR);
      const pruned = await eventually(
        () => ledger.report(day0 + HOUR, day0 + 4 * DAY, 'team').then(() => false, () => true),
        (refused) => refused,
        5_000,
      );
      expect(pruned).toBe(true);
      await sleep(100); // a few more passes
      for (const [a, b] of wholeDays) expect(await ledger.report(a, b, 'team'), `${a}-${b}`).toEqual(teamModel(rows, a, b, k.teamOf));
      // A key that changes team after its days were folded takes them along.
      await h.backend.keys.update(k.g2, { team: null });
      k.teams.set(k.g2, null);
      expect(await ledger.report(day0, day0 + 4 * DAY, 'team')).toEqual(teamModel(rows, day0, day0 + 4 * DAY, k.teamOf));
    });
  });
}
