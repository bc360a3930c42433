import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ReadWorker } from '../../src/store/sqlite/read-worker.js';

describe('ReadWorker.readPaged: a long result a page at a time, in one snapshot', () => {
  const dirs: string[] = [];
  const workers: ReadWorker[] = [];
  afterEach(async () => {
    for (const w of workers.splice(0)) await w.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  function fixture(rows: number): { file: string; db: Database.Database; worker: ReadWorker } {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-paged-'));
    dirs.push(dir);
    const file = join(dir, 'r.db');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY, label TEXT)');
    const ins = db.prepare('INSERT INTO t VALUES (?, ?)');
    db.transaction(() => {
      for (let i = 1; i <= rows; i++) ins.run(i, `row ${i}`);
    })();
    const worker = new ReadWorker();
    workers.push(worker);
    return { file, db, worker };
  }

  it('gives every row once, in order, a page per event, with the statements before the last read first', async () => {
    const { file, worker } = fixture(4_500);
    const pages: number[][] = [];
    const turns: string[] = [];
    const head = await worker.readPaged(
      file,
      [
        { sql: 'SELECT COUNT(*) FROM t', params: [], mode: 'get' },
        { sql: 'SELECT n, label FROM t WHERE n > ? ORDER BY n', params: [0], mode: 'all' },
      ],
      1_000,
      (page) => {
        pages.push((page as { n: number }[]).map((r) => r.n));
        // Work the event loop does between pages runs before the next page arrives.
        setImmediate(() => turns.push(`after page ${pages.length}`));
        turns.push(`page ${pages.length}`);
      },
    );
    expect(head).toEqual([4_500]);
    expect(pages.map((p) => p.length)).toEqual([1_000, 1_000, 1_000, 1_000, 500]);
    expect(pages.flat()).toEqual(Array.from({ length: 4_500 }, (_, i) => i + 1));
    expect(turns.slice(0, 4)).toEqual(['page 1', 'after page 1', 'page 2', 'after page 2']);
  });

  it('reads one snapshot: rows committed between pages are not seen, and the writer is never kept waiting', async () => {
    const { file, db, worker } = fixture(3_000);
    let seen = 0;
    let wrote = false;
    await worker.readPaged(file, [{ sql: 'SELECT n FROM t ORDER BY n', params: [], mode: 'all' }], 1_000, (page) => {
      seen += page.length;
      if (!wrote) {
        db.prepare('INSERT INTO t VALUES (?, ?)').run(10_000, 'late');
        db.prepare('DELETE FROM t WHERE n = 2999').run();
        wrote = true;
      }
    });
    expect(seen).toBe(3_000);
    expect(db.prepare('SELECT COUNT(*) AS c FROM t').get()).toEqual({ c: 3_000 });
  });

  it('an exact multiple of the page, and an empty result, end without a page too many', async () => {
    const { file, worker } = fixture(2_000);
    const sizes: number[] = [];
    await worker.readPaged(file, [{ sql: 'SELECT n FROM t', params: [], mode: 'all' }], 1_000, (p) => sizes.push(p.length));
    expect(sizes).toEqual([1_000, 1_000, 0]);
    const none: number[] = [];
    await worker.readPaged(file, [{ sql: 'SELECT n FROM t WHERE n < 0', params: [], mode: 'all' }], 1_000, (p) => none.push(p.length));
    expect(none).toEqual([0]);
  });

  it('a failing statement rejects with its error; a reader that throws stops the read, and the worker reads on', async () => {
    const { file, worker } = fixture(3_000);
    await expect(worker.readPaged(file, [{ sql: 'SELECT nope FROM t', params: [], mode: 'all' }], 1_000, () => {})).rejects.toThrow(/no such column/);
    await expect(
      worker.readPaged(file, [{ sql: 'SELECT n FROM t', params: [], mode: 'all' }], 1_000, () => {
        throw new Error('reader gave up');
      }),
    ).rejects.toThrow('reader gave up');
    expect(await worker.read(file, [{ sql: 'SELECT COUNT(*) FROM t', params: [], mode: 'get' }])).toEqual([3_000]);
  });
});
