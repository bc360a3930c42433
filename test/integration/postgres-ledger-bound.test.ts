import { describe, expect, it } from 'vitest';
import { PgCredits } from '../../src/store/postgres/credits.js';
import { PgLedger } from '../../src/store/postgres/ledger.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { row } from '../contract/support.js';

describe('PostgreSQL ledger while the database is unreachable', () => {
  it('counts zero-credit requests in memory by group, not by request; past 100,000 groups drops the oldest, counted; flush fails and keeps what it has', async () => {
    // Nothing listens on port 1: every connection is refused at once.
    const pool = openPool('postgres://tollgate@127.0.0.1:1/none');
    try {
      const ledger = new PgLedger(pool, new PgCredits(pool, 'bound-test'));
      // 100,500 hits in under two minutes: two groups, nothing dropped.
      for (let i = 0; i < 100_500; i++) await ledger.record(row('key_a', 1_000 + i));
      expect(ledger.backlog()).toEqual({ pending: 100_500, retrying: 0, dropped: 0 });
      // One hit a minute for 100,500 minutes: one group each, 100,502 in all; the oldest 502 go: the two first groups (100,500 hits) and 500 of the new.
      for (let i = 0; i < 100_500; i++) await ledger.record(row('key_b', 200_000 + i * 60_000));
      const backlog = ledger.backlog();
      expect(backlog).toEqual({ pending: 100_000, retrying: 0, dropped: 101_000 });
      await expect(ledger.flush()).rejects.toThrow();
      expect(ledger.backlog().pending).toBe(backlog.pending);
    } finally {
      await pool.end();
    }
  }, 30_000);
});
