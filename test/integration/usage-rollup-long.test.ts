import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BudgetStore } from '../../src/store/sqlite/budgets.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { DAY_MS } from '../../src/store/sqlite/ledger-rows.js';
import { LedgerStore } from '../../src/store/sqlite/ledger.js';
import { ReadWorker } from '../../src/store/sqlite/read-worker.js';
import { MAIN_MIGRATIONS } from '../../src/store/sqlite/schema.js';

/*
 * A roll-up longer than a call's arguments can hold (past ~120,000 rows), read with and without
 * the worker: without it (the CLI) the whole report is one page, which `push(...page)` turned
 * into "Maximum call stack size exceeded" for `tollgate usage --csv` over two years of 200 keys.
 */
const KEYS = 200;
const DAYS = 800;
let dir: string | undefined;
let db: DB | undefined;
let worker: ReadWorker | undefined;
afterEach(async () => {
  await worker?.close();
  db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  [dir, db, worker] = [undefined, undefined, undefined];
});

describe('Ledger.rollUp over 160,000 rows', () => {
  it('gives every row, in order, with and without the read worker, and the pages add up to it', async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-rollup-long-'));
    db = openDatabase(join(dir, 'tollgate.db'), MAIN_MIGRATIONS);
    const ins = db.prepare('INSERT INTO usage_daily VALUES (?, ?, ?, ?, ?, ?, ?, 0)');
    db.transaction(() => {
      for (let d = 1; d <= DAYS; d++) for (let k = 0; k < KEYS; k++) ins.run(d, `key_${String(k).padStart(3, '0')}`, 'profile', 3, 1, 2, 1);
    })();
    const [from, to] = [DAY_MS, (DAYS + 1) * DAY_MS];
    const direct = new LedgerStore(db, new BudgetStore(db), { flushEveryMs: 3_600_000 });
    const rows = await direct.rollUp(from, to, ['day', 'key']);
    expect(rows).toHaveLength(KEYS * DAYS);
    expect(rows[0]).toMatchObject({ day: '1970-01-02', key_id: 'key_000', requests: 3, credits: 2 });
    expect(rows.at(-1)).toMatchObject({ key_id: `key_${KEYS - 1}` });
    worker = new ReadWorker();
    const viaWorker = new LedgerStore(db, new BudgetStore(db), { flushEveryMs: 3_600_000, reader: worker });
    expect(await viaWorker.rollUp(from, to, ['day', 'key'])).toEqual(rows);
    let n = 0;
    for await (const page of viaWorker.rollUpPages(from, to, ['day', 'key'])) {
      expect(page.length).toBeLessThanOrEqual(2_000);
      n += page.length;
    }
    expect(n).toBe(rows.length);
  });
});
