/**
 * Usage reports and ledger retention through the running gateway: the retention pass on its
 * timer, exact answers over whole days it pruned, refusals at edges inside them (admin API
 * and CLI), and reports read off the event loop.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { retentionLog } from '../../bench/ledger.js';
import { runCli } from '../helpers/cli.js';
import { startStack, type Reply, type Stack } from '../helpers/stack.js';

const TOKEN = 'admin-token-for-tests-0123456789';
const DAY = 86_400_000;
let s: Stack | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

const admin = (path: string): Promise<Reply> => s!.get('/admin' + path, { key: null, headers: { authorization: `Bearer ${TOKEN}` } });
const nextTurn = () => new Promise<void>((r) => setImmediate(r));

describe('ledger retention in the gateway', () => {
  it('prunes raw rows past ledger.retentionDays on its timer; whole days stay exact; edges inside pruned days are refused', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 5, 10, 0, 0));
    s = await startStack({ clock, config: { adminToken: TOKEN, ledger: { retentionDays: 30, pruneIntervalMs: 20 } } });
    await s.get('/v1/profile?person.id=41');
    await s.get('/v1/profile?person.id=41');
    s.app.costs.flush();
    const before = await admin('/usage?from=2026-01-05&to=2026-01-05');
    expect(before.json.rows).toEqual([{ id: s.keyId, name: 'test', requests: 2, cache_hits: 1, credits: 3, credits_saved: 3, unsettled_credits: 0 }]);

    clock.advance(64 * DAY); // 2026-03-10: 2026-02-08 is the first day kept raw
    const db = new Database(join(s.dataDir, 'tollgate.db'), { readonly: true });
    try {
      const raw = () => db.prepare('SELECT COUNT(*) FROM ledger').pluck().get() as number;
      for (let i = 0; raw() > 0; i++) {
        if (i > 500) throw new Error('the retention pass never ran');
        await new Promise((r) => setTimeout(r, 10));
      }
    } finally {
      db.close();
    }
    // The pass's log line, read as benchmark 7 reads it to place the pass in time (it once read
    // a field the line no longer had, and `npm run bench` died there).
    for (let i = 0; !s.logs.some((l) => l.includes('past the retention deleted')); i++) {
      if (i > 500) throw new Error('the retention pass never logged');
      await new Promise((r) => setTimeout(r, 10));
    }
    const pass = retentionLog(s.logs.join('\n'))!;
    expect(pass.deleted).toBe(2);
    expect(Number.isFinite(pass.ms) && pass.ms >= 0).toBe(true);
    expect(Number.isFinite(pass.time)).toBe(true);

    // Whole days, pruned or not, are answered from the daily totals: unchanged.
    expect((await admin('/usage?from=2026-01-05&to=2026-01-05')).json.rows).toEqual(before.json.rows);
    expect((await admin('/usage?from=2026-01-01')).json.rows).toEqual(before.json.rows);
    const refused = await admin('/usage?from=2026-01-05T09:00:00Z');
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe('INVALID_PARAMETER');
    expect(refused.json.error.message).toMatch(/^from: 2026-01-05T09:00:00.000Z falls inside 2026-01-05, .*before 2026-02-08, the first day still held raw/);
    expect(refused.json.error.request_id).toBe(refused.headers['x-request-id']);
    const toRefused = await admin('/usage?from=2026-01-01&to=2026-01-05T12:00:00Z');
    expect(toRefused.json.error.message).toMatch(/^to: 2026-01-05T12:00:00.000Z falls inside 2026-01-05/);

    const cli = await runCli(['usage', '--from', '2026-01-05T09:00:00Z', '--to', '2026-01-06', '--data-dir', s.dataDir]);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toMatch(/--from: 2026-01-05T09:00:00.000Z falls inside 2026-01-05, .*2026-02-08, the first day still held raw/);
  });
});

describe('GET /admin/usage off the event loop', () => {
  it('the gateway answers /healthz while a report is being read', async () => {
    s = await startStack({ config: { adminToken: TOKEN } });
    // 300,000 raw rows today: the report reads them (today is a partial day, never from the totals).
    const today = Math.floor(Date.now() / DAY) * DAY;
    const n = 300_000;
    const db = new Database(join(s.dataDir, 'tollgate.db'));
    try {
      const insert = db.prepare("INSERT INTO ledger (request_id, ts, key_id, endpoint, status, credits, credits_saved) VALUES (?, ?, ?, 'profile', 200, 1, 0)");
      db.transaction(() => {
        for (let i = 0; i < n; i++) insert.run(`bulk_${i}`, today, s!.keyId);
        db.exec(`INSERT INTO usage_daily SELECT ts / ${DAY}, key_id, endpoint, COUNT(*), 0, SUM(credits), 0, 0 FROM ledger WHERE request_id LIKE 'bulk_%' GROUP BY 1, 2, 3`);
      })();
    } finally {
      db.close();
    }

    const events: string[] = [];
    const report = admin('/usage?by=endpoint').then((r) => (events.push('usage answered'), r));
    // The report's SQL is now in the worker thread...
    while (s.app.costs.ledger.reportsInFlight() === 0) {
      expect(events, 'the report was answered without ever being read off the event loop').toEqual([]);
      await nextTurn();
    }
    events.push('report in the worker');
    // ...and meanwhile the event loop serves another request.
    const health = await s.get('/healthz', { key: null });
    events.push(`healthz ${health.status}`);
    const r = await report;
    expect(events).toEqual(['report in the worker', 'healthz 200', 'usage answered']);
    expect(r.json.rows).toEqual([{ id: 'profile', name: 'profile', requests: n, cache_hits: 0, credits: n, credits_saved: 0, unsettled_credits: 0 }]);
  });
});
