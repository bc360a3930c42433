import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Checkpointer, type CheckpointResult } from '../../src/store/sqlite/checkpointer.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { startStack } from '../helpers/stack.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempFile = () => {
  const d = mkdtempSync(join(tmpdir(), 'tollgate-ckpt-'));
  dirs.push(d);
  return join(d, 'test.db');
};

const MIGRATIONS = [(d: DB) => d.exec('CREATE TABLE t (i INTEGER PRIMARY KEY, v TEXT NOT NULL) STRICT')];
const PAGE = 4096;
/** Past SQLite's default auto-checkpoint threshold of 1000 pages. */
const ROWS = 3000;

const size = (f: string) => (existsSync(f) ? statSync(f).size : 0);
const walSize = (file: string) => size(`${file}-wal`);
const row = (i: number) => `${i}:`.padEnd(2000, 'x');

/** One commit per row, as the gateway's writes are: thousands of small transactions. */
function fill(db: DB, from: number, count: number): void {
  const ins = db.prepare('INSERT INTO t (i, v) VALUES (?, ?)');
  for (let i = from; i < from + count; i++) ins.run(i, row(i));
}

const until = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
};

function collectErrors() {
  const errors: Array<{ err: Error; file: string | null }> = [];
  return { errors, onError: (err: Error, file: string | null) => errors.push({ err, file }) };
}

function expectAllRows(file: string, count: number): void {
  const db = openDatabase(file, MIGRATIONS);
  try {
    expect(db.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: count });
    // Every row intact, not just the count.
    for (const r of db.prepare('SELECT i, v FROM t').iterate() as IterableIterator<{ i: number; v: string }>) {
      if (r.v !== row(r.i)) throw new Error(`row ${r.i} damaged`);
    }
  } finally {
    db.close();
  }
}

describe('openDatabase({ autoCheckpoint: false })', () => {
  it('never checkpoints by itself: the WAL keeps growing and the database file is untouched, unlike the default', () => {
    const off = tempFile();
    const on = tempFile();
    const dbOff = openDatabase(off, MIGRATIONS, { autoCheckpoint: false });
    const dbOn = openDatabase(on, MIGRATIONS);
    try {
      expect(dbOff.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
      expect(dbOn.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
      const offBase = size(off);
      const onBase = size(on);
      let lastWal = walSize(off);
      for (let batch = 0; batch < 6; batch++) {
        fill(dbOff, batch * (ROWS / 6), ROWS / 6);
        fill(dbOn, batch * (ROWS / 6), ROWS / 6);
        expect(walSize(off)).toBeGreaterThan(lastWal);
        lastWal = walSize(off);
      }
      // Nothing was copied back into the database file: no checkpoint ran.
      expect(size(off)).toBe(offBase);
      expect(walSize(off)).toBeGreaterThan(ROWS * PAGE);
      // The same writes on a default connection did auto-checkpoint (so the load is enough).
      expect(size(on)).toBeGreaterThan(onBase + 1000 * PAGE);
      expect(walSize(on)).toBeLessThan(walSize(off) / 2);
    } finally {
      dbOff.close();
      dbOn.close();
    }
  });
});

describe('Checkpointer', () => {
  it('checkpoints a WAL the connection no longer checkpoints (PASSIVE), from its worker, on its interval', async () => {
    const file = tempFile();
    const db = openDatabase(file, MIGRATIONS, { autoCheckpoint: false });
    const { errors, onError } = collectErrors();
    const base = size(file);
    fill(db, 0, ROWS);
    const wal = walSize(file);
    expect(wal).toBeGreaterThan(ROWS * PAGE);

    const ck = new Checkpointer([file], { intervalMs: 20, onError });
    try {
      // The rows reach the database file although this thread never checkpointed.
      await until(() => size(file) > base + (ROWS / 2) * PAGE);
      const [r] = await ck.checkpoint();
      expect(r).toMatchObject({ file, mode: 'PASSIVE', busy: false });
      expect(r!.checkpointed).toBe(r!.log);
      // PASSIVE leaves the file in place, and the next writes reuse it from the start: the
      // WAL stays bounded by what accumulates between two checkpoints.
      expect(walSize(file)).toBe(wal);
      fill(db, ROWS, 500);
      expect(walSize(file)).toBe(wal);
      expect(errors).toEqual([]);
    } finally {
      await ck.close();
      db.close();
    }
    expectAllRows(file, ROWS + 500);
  });

  it('truncates a WAL grown past truncateAboveBytes, while the main connection keeps writing; all data survives close and reopen', async () => {
    const file = tempFile();
    const db = openDatabase(file, MIGRATIONS, { autoCheckpoint: false });
    const { errors, onError } = collectErrors();
    const truncations: CheckpointResult[] = [];
    const ck = new Checkpointer([file], { intervalMs: 10, truncateAboveBytes: 1024 * 1024, onError, onTruncate: (r) => truncations.push(r) });
    let written = 0;
    let maxWal = 0;
    try {
      await ck.checkpoint(); // the worker is up (it takes ~100 ms to start)
      // Writes interleaved with the worker's checkpoints, in batches that each outgrow 1 MiB;
      // the next batch is written once the worker has truncated the last (waiting a fixed
      // 15 ms instead failed on a loaded machine, where the worker thread ran later).
      for (let batch = 0; batch < 10; batch++) {
        fill(db, written, 600);
        written += 600;
        maxWal = Math.max(maxWal, walSize(file));
        // Generous: under a full suite on 2 cores the worker's truncation once took over 5 s (CI).
        await until(() => walSize(file) === 0, 15_000);
      }
      await until(() => walSize(file) === 0, 15_000);
      // Without the checkpointer this WAL would hold all 6000 rows (~24 MiB); it never did.
      expect(maxWal).toBeLessThan((written * PAGE) / 2);
      const [r] = await ck.checkpoint();
      expect(r).toMatchObject({ mode: 'PASSIVE', busy: false, log: 0 });
      expect(errors).toEqual([]);
      // Each truncation was reported (for the log line 'WAL truncated'): the PASSIVE passes made
      // first, without the lock, and how long the TRUNCATE itself took.
      const done = truncations.filter((t) => !t.busy);
      expect(done.length).toBeGreaterThanOrEqual(10);
      for (const t of truncations) {
        expect(t.walBytes).toBeGreaterThan(1024 * 1024);
        expect(t.passes).toBeGreaterThanOrEqual(1);
        expect(t.passes).toBeLessThanOrEqual(4);
        expect(t.lockMs).toBeGreaterThanOrEqual(0);
      }
    } finally {
      await ck.close();
      db.close();
    }
    expectAllRows(file, written);
  }, 60_000);

  it('close() runs a last checkpoint, resolves promptly, ends the worker and is idempotent', async () => {
    const file = tempFile();
    const db = openDatabase(file, MIGRATIONS, { autoCheckpoint: false });
    const { errors, onError } = collectErrors();
    // An interval far beyond the test: only close() can checkpoint.
    const ck = new Checkpointer([file], { intervalMs: 60_000, onError });
    const base = size(file);
    fill(db, 0, ROWS);
    expect(ck.running).toBe(true);

    const t0 = Date.now();
    await ck.close();
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(ck.running).toBe(false);
    expect(size(file)).toBeGreaterThan(base + (ROWS / 2) * PAGE);
    await ck.close();
    await expect(ck.checkpoint()).rejects.toThrow(/not running/);
    expect(errors).toEqual([]);

    // The worker's connection is gone too: closing the last one removes the WAL.
    db.close();
    expect(existsSync(`${file}-wal`)).toBe(false);
    expectAllRows(file, ROWS);
  });

  it('never keeps the process alive: a script that starts one and never closes it still exits', () => {
    const file = tempFile();
    const db = openDatabase(file, MIGRATIONS, { autoCheckpoint: false });
    fill(db, 0, ROWS);
    const base = size(file);
    const src = join(import.meta.dirname, '../../src/store/sqlite/checkpointer.ts');
    // The script waits (on its own timers) until the timer's checkpoints have reached the
    // database file, then ends with the Checkpointer still running.
    const script = `
      import { statSync } from 'node:fs';
      const { Checkpointer } = await import(${JSON.stringify(src)});
      new Checkpointer([${JSON.stringify(file)}], { intervalMs: 5, onError: (e) => console.error('CHECKPOINT ERROR', e) });
      const end = Date.now() + 5000;
      while (statSync(${JSON.stringify(file)}).size <= ${base} && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
      console.log('end of script');`;
    try {
      const t0 = Date.now();
      const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: join(import.meta.dirname, '../..'),
        encoding: 'utf8',
        timeout: 10_000,
      });
      expect(r.error).toBeUndefined(); // not killed by the timeout
      expect(r.stdout).toContain('end of script');
      expect(r.stderr).not.toContain('CHECKPOINT ERROR');
      expect(r.status).toBe(0);
      expect(Date.now() - t0).toBeLessThan(8000);
      expect(size(file)).toBeGreaterThan(base + (ROWS / 2) * PAGE);
    } finally {
      db.close();
    }
  });

  it('a file its worker opened before it was switched to WAL is checkpointed once it is (regression: log -1 forever)', async () => {
    const file = tempFile();
    // The file exists in rollback-journal mode when the first tick opens it, as between a
    // database's creation and its journal_mode pragma.
    const early = new Database(file);
    early.exec('CREATE TABLE t (i INTEGER PRIMARY KEY, v TEXT NOT NULL) STRICT');
    const ck = new Checkpointer([file], { intervalMs: 60_000, onError: () => {} });
    try {
      const [before] = await ck.checkpoint();
      expect(before!.log).toBe(-1);
      early.pragma('journal_mode = WAL');
      early.pragma('wal_autocheckpoint = 0');
      const ins = early.prepare('INSERT INTO t (i, v) VALUES (?, ?)');
      for (let i = 0; i < 1500; i++) ins.run(i, row(i));
      const [r] = await ck.checkpoint();
      expect(r!.checkpointed).toBeGreaterThan(1000);
    } finally {
      await ck.close();
      early.close();
    }
  });

  it('reports a failing checkpoint to onError, keeps running, and recovers once the file is there', async () => {
    const file = tempFile();
    const { errors, onError } = collectErrors();
    const ck = new Checkpointer([file], { intervalMs: 10, onError });
    try {
      await until(() => errors.length >= 2);
      expect(errors[0]!.file).toBe(file);
      expect(errors[0]!.err.message).toContain(file);
      expect(ck.running).toBe(true);

      const db = openDatabase(file, MIGRATIONS, { autoCheckpoint: false });
      fill(db, 0, 1500);
      // A tick sent before the file existed may still report; the first checkpoint after it must not.
      await ck.checkpoint();
      const seen = errors.length;
      fill(db, 1500, 1500);
      const [r] = await ck.checkpoint();
      expect(r).toMatchObject({ file, mode: 'PASSIVE', busy: false });
      expect(r!.checkpointed).toBeGreaterThan(1000);
      expect(errors.length).toBe(seen);
      await ck.close();
      db.close();
      expectAllRows(file, 3000);
    } finally {
      await ck.close();
    }
  });
});

describe('createApp', () => {
  it('checkpoints both databases in the background, and stops the checkpointer before closing them', async () => {
    const s = await startStack();
    try {
      const files = ['tollgate.db', 'cache.db'].map((f) => join(s.dataDir, f));
      const before = files.map(size);
      for (let i = 0; i < 5; i++) expect((await s.get(`/v1/profile?person.id=${200 + i}`)).status).toBe(200);
      // The server's connections do not checkpoint (their writes stay in the WAL); the
      // app's checkpointer (1 s interval) copies them into both database files.
      await until(() => files.every((f, i) => size(f) > before[i]!), 5000);
      const t0 = Date.now();
      await s.app.close();
      expect(Date.now() - t0).toBeLessThan(3000);
      // The worker's connections were closed first, so the server's were the last: SQLite
      // removed the WALs on close.
      for (const f of files) expect(existsSync(`${f}-wal`)).toBe(false);
      expect(s.logs.join('')).not.toContain('WAL checkpoint failed');
    } finally {
      await s.close();
    }
  });
});
