import { describe, expect, it } from 'vitest';
import type { LedgerRow, UsageRow } from '../../src/domain/ledger.js';
import type { BackendFactory } from './backends.js';
import { DAY, HOUR, row, T0, withHandle } from './support.js';

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

    it('a request id is recorded and charged once, however often it is recorded', async () => {
      const charged = row('key_a', T0, { cache: 'MISS', credits: 2 });
      await ledger().record(charged);
      await ledger().record(charged);
      await ledger().record({ ...charged, credits: 5 });
      const free = row('key_a', T0 + 1);
      await ledger().record(free);
      await ledger().record(free);
      await ledger().flush();
      await ledger().record(free);
      await ledger().flush();
      expect(await h().backend.credits.used('key_a', 'month', T0)).toBe(2);
      expect(await ledger().report(T0, T0 + DAY, 'key')).toEqual([usage('key_a', 'key_a', 2, 1, 2, 0, 0)]);
      // A large batch, each row in it twice.
      const many = Array.from({ length: 120 }, (_, i) => row('key_b', T0 + i));
      for (const r of [...many, ...many.slice(0, 70)]) await ledger().record(r);
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
}
