import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { UsageRangePruned, type LedgerRow, type UsageGroup, type UsageRow } from '../../src/domain/ledger.js';
import type { BackendFactory, Handle } from './backends.js';
import { breakdownContract } from './breakdown.contract.js';
import { countedUsageContract } from './counted-usage.contract.js';
import { teamUsageContract } from './team-usage.contract.js';
import { DAY, eventually, HOUR, row, sleep, T0, withHandle } from './support.js';

const totals = (rows: UsageRow[]) => rows.map(({ id, requests, credits }) => ({ id, requests, credits }));
const usage = (id: string, name: string, requests: number, cache_hits: number, credits: number, credits_saved: number, unsettled_credits: number): UsageRow => ({
  id,
  name,
  requests,
  cache_hits,
  credits,
  credits_saved,
  unsettled_credits,
});

/** Ledger: charged rows are durable at once, batched rows after a flush, every request counted once. */
export function ledgerContract(factory: BackendFactory): void {
  describe(`Ledger contract: ${factory.name}`, () => {
    const h = withHandle(factory);
    const ledger = () => h().backend.ledger;

    it('a charged row is durable when record returns: a crash right after loses nothing', async () => {
      await ledger().record(row('key_a', T0, { cache: 'MISS', credits: 3 }));
      await ledger().record(row('key_a', T0 + 1, { cache: null, status: 404, credits: 1, code: 'NOT_FOUND' }));
      await h().crash();
      const next = (await h().peer()).backend;
      expect(totals(await next.ledger.report(T0, T0 + DAY, 'key'))).toEqual([{ id: 'key_a', requests: 2, credits: 4 }]);
      expect(await next.credits.used('key_a', 'day', T0)).toBe(4);
    });

    it('zero-credit rows are written by flush (then durable); the backlog is empty after it', async () => {
      expect(ledger().backlog()).toEqual({ pending: 0, retrying: 0, dropped: 0 });
      for (let i = 0; i < 5; i++) await ledger().record(row('key_a', T0 + i, { creditsSaved: 2 }));
      const before = ledger().backlog();
      expect(before.pending).toBeGreaterThanOrEqual(0);
      expect(before.pending).toBeLessThanOrEqual(5);
      expect(before.retrying + before.dropped).toBe(0);
      await ledger().flush();
      await ledger().flush();
      expect(ledger().backlog()).toEqual({ pending: 0, retrying: 0, dropped: 0 });
      await h().crash();
      const next = (await h().peer()).backend.ledger;
      expect(await next.report(T0, T0 + DAY, 'endpoint')).toEqual([usage('profile', 'profile', 5, 5, 0, 10, 0)]);
    });

    it('a charged request id is recorded and charged once, however often it is recorded; zero-credit records are counted, each once', async () => {
      const charged = row('key_a', T0, { cache: 'MISS', credits: 2 });
      await ledger().record(charged);
      await ledger().record(charged);
      await ledger().record({ ...charged, credits: 5 });
      // A zero-credit record is a count, not a row: the gateway records each request once (accounting.ts).
      const free = row('key_a', T0 + 1);
      await ledger().record(free);
      await ledger().flush();
      expect(await h().backend.credits.used('key_a', 'month', T0)).toBe(2);
      expect(await ledger().report(T0, T0 + DAY, 'key')).toEqual([usage('key_a', 'key_a', 2, 1, 2, 0, 0)]);
      const many = Array.from({ length: 120 }, (_, i) => row('key_b', T0 + i));
      for (const r of many) await ledger().record(r);
      await ledger().flush();
      expect(totals(await ledger().report(T0, T0 + DAY, 'key'))).toEqual([
        { id: 'key_a', requests: 2, credits: 2 },
        { id: 'key_b', requests: 120, credits: 0 },
      ]);
    });

    it('report: totals over [from, to) grouped by key (named), UTC day or endpoint, from every process, exactly', async () => {
      const alpha = (await h().backend.keys.create({ name: 'alpha' })).key.id;
      const from = T0; // mid-day edges on both sides, a whole day between them
      const to = T0 + 2 * DAY + 2 * HOUR;
      const mine: LedgerRow[] = [
        row(alpha, T0 - 1, { cache: 'MISS', credits: 100 }), // before `from`
        row(alpha, T0, { cache: 'HIT', creditsSaved: 2 }),
        row(alpha, T0 + HOUR, { cache: 'MISS', credits: 3 }),
        row(alpha, T0 + DAY, { endpoint: 'company', cache: 'STALE', creditsSaved: 1 }),
        row(alpha, to - 1, { endpoint: 'company', cache: 'HIT', creditsSaved: 4 }),
      ];
      const theirs: LedgerRow[] = [
        row('key_unknown', T0 + 2 * HOUR, { endpoint: 'company', cache: 'MISS', credits: 5, unsettled: true }),
        row('key_unknown', T0 + DAY + HOUR, { cache: 'BYPASS', credits: 1 }),
        row('key_unknown', to, { cache: 'MISS', credits: 100 }), // at `to`: outside
      ];
      const other = (await h().peer()).backend;
      for (const r of mine) await ledger().record(r);
      for (const r of theirs) await other.ledger.record(r);
      await ledger().flush();
      await other.ledger.flush();
      expect(await ledger().report(from, to, 'key')).toEqual([
        usage('key_unknown', 'key_unknown', 2, 0, 6, 0, 5), // most credits first
        usage(alpha, 'alpha', 4, 3, 3, 7, 0),
      ]);
      expect(await ledger().report(from, to, 'day')).toEqual([
        usage('2026-01-01', '2026-01-01', 3, 1, 8, 2, 5),
        usage('2026-01-02', '2026-01-02', 2, 1, 1, 1, 0),
        usage('2026-01-03', '2026-01-03', 1, 1, 0, 4, 0),
      ]);
      expect(await ledger().report(from, to, 'endpoint')).toEqual([usage('company', 'company', 3, 2, 5, 5, 5), usage('profile', 'profile', 3, 1, 4, 2, 0)]);
      expect(await other.ledger.report(from, to, 'endpoint')).toEqual(await ledger().report(from, to, 'endpoint'));
      expect(await ledger().report(T0 + 3 * DAY, T0 + 4 * DAY, 'key')).toEqual([]);
    });

    it('whole-day ranges agree with the sum of their parts', async () => {
      const day0 = T0 - 10 * HOUR; // 2026-01-01 00:00 UTC
      for (let i = 0; i < 12; i++) await ledger().record(row(i % 2 ? 'key_a' : 'key_b', day0 + i * 7 * HOUR, { cache: 'MISS', credits: i + 1 }));
      const sum = (rows: UsageRow[]) => rows.reduce((a, r) => a + r.credits, 0);
      const whole = sum(await ledger().report(day0, day0 + 4 * DAY, 'key'));
      const parts = sum(await ledger().report(day0, day0 + 30 * HOUR, 'key')) + sum(await ledger().report(day0 + 30 * HOUR, day0 + 4 * DAY, 'key'));
      expect(whole).toBe(78);
      expect(parts).toBe(78);
    });
  });

  countedUsageContract(factory);
  teamUsageContract(factory);
  breakdownContract(factory);

  describe(`Ledger retention contract: ${factory.name}`, () => {
    let h: Handle | undefined;
    afterEach(async () => {
      await h?.cleanup();
      h = undefined;
    });
    /** A server on a fresh storage pruning every 20 ms, at 2026-01-01 10:00 on its fake clock. */
    const open = async (retentionDays: number | null) => (h = await factory.open({ clock: new FakeClock(T0), ledger: { retentionDays, pruneIntervalMs: 20 } }));
    const day0 = T0 - 10 * HOUR; // 2026-01-01 00:00 UTC
    const groups: UsageGroup[] = ['key', 'team', 'day', 'endpoint'];
    /** Rows every 5 hours over `days` days: two keys, two endpoints, hits, misses, unsettled charges. */
    const history = (days: number): LedgerRow[] =>
      Array.from({ length: (days * 24) / 5 }, (_, i) =>
        row(i % 2 ? 'key_a' : 'key_b', day0 + i * 5 * HOUR + 1, {
          endpoint: i % 3 ? 'profile' : 'company',
          cache: i % 4 ? 'MISS' : 'HIT',
          credits: i % 4 ? 1 + (i % 3) : 0,
          creditsSaved: i % 4 ? 0 : 2,
          unsettled: i % 7 === 1,
        }),
      );
    const refusal = (ledger: Handle['backend']['ledger'], from: number, to: number) => ledger.report(from, to, 'key').then(() => null, (err: unknown) => err);

    it('past ledger.retentionDays a server keeps whole days exact and refuses a range edge inside a pruned day', async () => {
      const { backend, clock } = await open(2);
      const ledger = backend.ledger;
      for (const r of history(5)) await ledger.record(r);
      await ledger.flush();
      const wholeDays: Array<[number, number]> = [[day0, day0 + 5 * DAY], [day0 + DAY, day0 + 3 * DAY], [day0 + 2 * DAY, day0 + 4 * DAY + 7 * HOUR]];
      const before = await Promise.all(wholeDays.flatMap(([a, b]) => groups.map((by) => ledger.report(a, b, by))));
      const recent = await ledger.report(day0 + 3 * DAY + HOUR, day0 + 4 * DAY + 13 * HOUR, 'day');
      expect(await refusal(ledger, day0 + HOUR, day0 + 5 * DAY)).toBeNull();

      // Day 5, 01:00: with 2 days kept raw, days 0–2 are pruned to their totals at the next pass.
      clock.set(day0 + 5 * DAY + HOUR);
      const refused = await eventually(() => refusal(ledger, day0 + HOUR, day0 + 5 * DAY), (e) => e !== null, 5_000);
      expect(refused).toBeInstanceOf(UsageRangePruned);
      expect(refused).toMatchObject({ edge: 'from', at: day0 + HOUR, rawFrom: day0 + 3 * DAY });
      expect(await refusal(ledger, day0, day0 + 2 * DAY + 30 * 60_000)).toMatchObject({ edge: 'to', rawFrom: day0 + 3 * DAY });
      await sleep(100); // a few more passes: the assertions below hold at any moment of one, and after it
      expect(await Promise.all(wholeDays.flatMap(([a, b]) => groups.map((by) => ledger.report(a, b, by))))).toEqual(before);
      expect(await ledger.report(day0 + 3 * DAY + HOUR, day0 + 4 * DAY + 13 * HOUR, 'day')).toEqual(recent);

      // A row of a pruned day recorded late still counts, in its whole day.
      const [late] = await ledger.report(day0 + DAY, day0 + 2 * DAY, 'endpoint');
      await ledger.record(row('key_a', day0 + DAY + 3 * HOUR, { endpoint: 'company', cache: 'MISS', credits: 5 }));
      await ledger.flush();
      await sleep(60);
      expect(await ledger.report(day0 + DAY, day0 + 2 * DAY, 'endpoint')).toContainEqual({ ...late!, requests: late!.requests + 1, credits: late!.credits + 5 });
    });

    it('retentionDays null: nothing is ever pruned, any range is answered to the millisecond', async () => {
      const { backend, clock } = await open(null);
      for (const r of history(3)) await backend.ledger.record(r);
      await backend.ledger.flush();
      const partial = await backend.ledger.report(day0 + HOUR, day0 + 2 * DAY + 7 * HOUR, 'day');
      clock.advance(3650 * DAY);
      await sleep(150); // several passes' worth
      expect(await backend.ledger.report(day0 + HOUR, day0 + 2 * DAY + 7 * HOUR, 'day')).toEqual(partial);
      expect(partial.reduce((n, r) => n + r.requests, 0)).toBe(history(3).filter((r) => r.ts >= day0 + HOUR && r.ts < day0 + 2 * DAY + 7 * HOUR).length);
    });
  });
}
