import { describe, expect, it } from 'vitest';
import { PgCredits } from '../../src/store/postgres/credits.js';
import { PgLedger } from '../../src/store/postgres/ledger.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { row } from '../contract/support.js';

describe('PostgreSQL ledger while the database is unreachable', () => {
  it('keeps at most 100,000 zero-credit rows, drops the oldest beyond and counts them; flush fails and keeps what it has', async () => {
    // Nothing listens on port 1: every connection is refused at once.
    const pool = openPool('postgres://tollgate@127.0.0.1:1/none');
    try {
      const ledger = new PgLedger(pool, new PgCredits(pool, 'bound-test'));
      for (let i = 0; i < 100_500; i++) await ledger.record(row('key_a', 1_000 + i));
      const backlog = ledger.backlog();
      expect(backlog.pending).toBeLessThanOrEqual(100_000);
      expect(backlog.pending + backlog.dropped).toBe(100_500);
      expect(backlog.dropped).toBeGreaterThan(0);
      await expect(ledger.flush()).rejects.toThrow();
      expect(ledger.backlog().pending).toBe(backlog.pending);
    } finally {
      await pool.end();
    }
  }, 30_000);
});
