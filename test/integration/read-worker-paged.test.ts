import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ReadWorker } from '../../src/store/sqlite/read-worker.js';

describe('ReadWorker.pages: a long result a page at a time, in one snapshot', () => {
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

  it('gives every row once, in order, the next page asked for only when the consumer takes it, with the statements before the last read first', async () => {
    const { file, worker } = fixture(4_500);
    const pages: number[][] = [];
    const heads: unknown[][] = [];
    const asked: number[] = [];
    const statements = [
      { sql: 'SELECT COUNT(*) FROM t', params: [], mode: 'get' },
      { sql: 'SELECT n, label FROM t WHERE n > ? ORDER BY n', params: [0], mode: 'all' },
    ] as const;
    for await (const { head, rows } of worker.pages(file, statements, 1_000)) {
      heads.push(head);
      pages.push((rows as { n: number }[]).map((r) => r.n));
      // Nothing is asked of the worker while a page is being taken: the next is sent for only then.
      asked.push(worker.inFlight());
      await new Promise((r) => setTimeout(r, 5));
      asked.push(worker.inFlight());
    }
    expect(heads.every((h) => h.length === 1 && h[0] === 4_500)).toBe(true);
    expect(pages.map((p) => p.length)).toEqual([1_000, 1_000, 1_000, 1_000, 500]);
    expect(pages.flat()).toEqual(Array.from({ length: 4_500 }, (_, i) => i + 1));
    expect(asked).toEqual(Array.from({ length: 10 }, () => 0));
  });

  it('reads one snapshot: rows committed between pages are not seen, and the writer is never kept waiting', async () => {
    const { file, db, worker } = fixture(3_000);
    let seen = 0;
    let wrote = false;
    for await (const { rows } of worker.pages(file, [{ sql: 'SELECT n FROM t ORDER BY n', params: [], mode: 'all' }], 1_000)) {
      seen += rows.length;
      if (!wrote) {
        db.prepare('INSERT INTO t VALUES (?, ?)').run(10_000, 'late');
        db.prepare('DELETE FROM t WHERE n = 2999').run();
        wrote = true;
      }
    }
    expect(seen).toBe(3_000);
    expect(db.prepare('SELECT COUNT(*) AS c FROM t').get()).toEqual({ c: 3_000 });
  });

  it('an exact multiple of the page, and an empty result, end without a page too many', async () => {
    const { file, worker } = fixture(2_000);
    const sizes = async (sql: string) => {
      const out: number[] = [];
      for await (const { rows } of worker.pages(file, [{ sql, params: [], mode: 'all' }], 1_000)) out.push(rows.length);
      return out;
    };
    expect(await sizes('SELECT n FROM t')).toEqual([1_000, 1_000, 0]);
    expect(await sizes('SELECT n FROM t WHERE n < 0')).toEqual([0]);
  });

  it('a failing statement rejects with its error; a reader that stops early ends the read, and the worker reads on', async () => {
    const { file, db, worker } = fixture(3_000);
    const drain = async (sql: string) => {
      for await (const _ of worker.pages(file, [{ sql, params: [], mode: 'all' }], 1_000));
    };
    await expect(drain('SELECT nope FROM t')).rejects.toThrow(/no such column/);
    for await (const { rows } of worker.pages(file, [{ sql: 'SELECT n FROM t', params: [], mode: 'all' }], 1_000)) {
      expect(rows).toHaveLength(1_000);
      break;
    }
    // The stopped read's snapshot is gone: a TRUNCATE checkpoint, which needs every reader gone, is not refused busy.
    // From a connection of its own that never waits (busy_timeout 0), after a write of its own: the
    // writer's connection, waiting up to 5 s, had passed while the worker still held the read (it
    // could not close a connection whose statement was mid-iteration).
    db.prepare('INSERT INTO t VALUES (?, ?)').run(20_000, 'after');
    const checkpointed = async () => {
      const probe = new Database(file);
      try {
        probe.pragma('busy_timeout = 0');
        probe.exec('CREATE TABLE IF NOT EXISTS probe (x); INSERT INTO probe VALUES (1)');
        return (probe.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[])[0]!.busy === 0;
      } finally {
        probe.close();
      }
    };
    let ok = await checkpointed();
    for (let i = 0; !ok && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 20));
      ok = await checkpointed();
    }
    expect(ok).toBe(true);
    expect(await worker.read(file, [{ sql: 'SELECT COUNT(*) FROM t', params: [], mode: 'get' }])).toEqual([3_001]);
  });
});
