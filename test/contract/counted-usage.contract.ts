import { describe, expect, it } from 'vitest';
import type { LedgerRow, UsageGroup, UsageRow } from '../../src/domain/ledger.js';
import type { BackendFactory } from './backends.js';
import { DAY, row, sumPerGroup, T0, withHandle } from './support.js';

const MINUTE = 60_000;
// By team every key here is of none (key_a and key_b are not created): the null group; team-usage.contract.ts has teams.
const GROUPS: UsageGroup[] = ['key', 'team', 'day', 'endpoint'];

/** The report a ledger of one row per request would give for `rows` over [from, to): the model. */
function model(rows: readonly LedgerRow[], from: number, to: number, by: UsageGroup): UsageRow[] {
  const rowsOut = sumPerGroup(rows, from, to, (r) =>
    by === 'team' ? null : by === 'key' ? r.keyId : by === 'endpoint' ? r.endpoint : new Date(r.ts).toISOString().slice(0, 10),
  );
  const byId = (a: UsageRow, b: UsageRow) => (a.id! < b.id! ? -1 : 1);
  return by === 'key' || by === 'team' ? rowsOut.sort((a, b) => b.credits - a.credits || b.requests - a.requests || byId(a, b)) : rowsOut.sort(byId);
}

/** Hits, refusals and collapsed followers (nothing charged, nothing reserved) of two keys on three endpoints, one every 37 ms. */
function zeroCredit(n: number, start: number): LedgerRow[] {
  return Array.from({ length: n }, (_, i) => {
    const kind = i % 10;
    return row(i % 3 ? 'key_a' : 'key_b', start + i * 37, {
      endpoint: ['profile', 'company', 'profile_posts'][i % 3 === 0 ? 0 : i % 2 ? 1 : 2]!,
      cache: kind < 7 ? (kind === 6 ? 'STALE' : 'HIT') : kind === 7 ? null : 'MISS',
      status: kind === 7 ? 429 : 200,
      code: kind === 7 ? 'RATE_LIMITED' : null,
      creditsSaved: kind < 7 ? 1 + (i % 4) : 0,
    });
  });
}

/**
 * Requests that charged and reserved nothing are counted per minute, key, endpoint and outcome
 * (store/usage-tally.ts), not written one row each: the reports must stay what one row per
 * request gave, before a flush, after it, across processes and across a restart.
 */
export function countedUsageContract(factory: BackendFactory): void {
  describe(`Counted usage contract: ${factory.name}`, () => {
    const h = withHandle(factory);

    it('n zero-credit requests: every report shows n requests, their hits and credits saved, exactly as rows would, before and after a flush', async () => {
      const rows = zeroCredit(2_000, T0 - 30 * 1000); // 74 s, across minute boundaries
      const charged = [row('key_a', T0 + 5, { cache: 'MISS', credits: 3 }), row('key_b', T0 + DAY, { cache: 'MISS', credits: 2 })];
      const ledger = h().backend.ledger;
      for (const r of [...rows, ...charged]) await ledger.record(r);
      const all = [...rows, ...charged];
      // Not flushed yet: a report flushes first, so it counts them.
      for (const by of GROUPS) expect(await ledger.report(T0 - DAY, T0 + 2 * DAY, by)).toEqual(model(all, T0 - DAY, T0 + 2 * DAY, by));
      await ledger.flush();
      expect(ledger.backlog()).toEqual({ pending: 0, retrying: 0, dropped: 0 });
      // Range edges on minute boundaries split the counts exactly; another process reads the same.
      const other = (await h().peer()).backend.ledger;
      for (const [from, to] of [[T0 - 30_000, T0 + MINUTE], [T0, T0 + MINUTE], [T0 + MINUTE, T0 + DAY]] as const) {
        for (const by of GROUPS) expect(await other.report(from, to, by)).toEqual(model(all, from, to, by));
      }
    });

    it('counts add up across flushes, and a process reopened on the storage reads them', async () => {
      const ledger = h().backend.ledger;
      const rows = zeroCredit(300, T0);
      for (const [i, r] of rows.entries()) {
        await ledger.record(r);
        if (i % 70 === 0) await ledger.flush();
      }
      expect(ledger.backlog().pending).toBeGreaterThan(0);
      await ledger.flush();
      await h().crash();
      const next = (await h().peer()).backend.ledger;
      for (const by of GROUPS) expect(await next.report(T0, T0 + DAY, by)).toEqual(model(rows, T0, T0 + DAY, by));
    });

    it('a crash loses only what was counted since the last flush (never a charge); a clean close loses nothing', async () => {
      const first = zeroCredit(40, T0);
      const unflushed = zeroCredit(25, T0 + 10 * MINUTE);
      const charge = row('key_a', T0 + 11 * MINUTE, { cache: 'MISS', credits: 4 });
      for (const r of first) await h().backend.ledger.record(r);
      await h().backend.ledger.flush();
      for (const r of unflushed) await h().backend.ledger.record(r);
      await h().backend.ledger.record(charge);
      expect(h().backend.ledger.backlog().pending).toBe(25);
      await h().crash();
      const second = await h().peer();
      expect(await second.backend.ledger.report(T0, T0 + DAY, 'key')).toEqual(model([...first, charge], T0, T0 + DAY, 'key'));

      const later = zeroCredit(33, T0 + 20 * MINUTE);
      for (const r of later) await second.backend.ledger.record(r);
      await second.backend.close();
      const third = (await h().peer()).backend.ledger;
      expect(await third.report(T0, T0 + DAY, 'endpoint')).toEqual(model([...first, charge, ...later], T0, T0 + DAY, 'endpoint'));
    });

    it('a group is reported at its earliest request\'s time: a range edge inside a minute takes the group whole, or not at all', async () => {
      const ledger = h().backend.ledger;
      const a = row('key_a', T0 + 10_000, { creditsSaved: 1 });
      const b = row('key_a', T0 + 50_000, { creditsSaved: 2 });
      const c = row('key_a', T0 + 70_000, { creditsSaved: 4 }); // the next minute: a group of its own
      for (const r of [a, b, c]) await ledger.record(r);
      await ledger.flush();
      const saved = async (from: number, to: number) => (await ledger.report(from, to, 'key')).reduce((n, u) => n + u.credits_saved, 0);
      expect(await saved(T0, T0 + 20_000)).toBe(3);
      expect(await saved(T0 + 20_000, T0 + 2 * MINUTE)).toBe(4);
      expect(await saved(T0 + 10_000, T0 + 70_001)).toBe(7);
      expect(await saved(T0 + 10_001, T0 + 70_000)).toBe(0);
    });
  });
}
