import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { NoWaitWrites } from '../../src/store/sqlite/no-wait.js';
import { WriteGate } from '../../src/store/write-gate.js';
import { StorageUnavailable } from '../../src/store/storage-errors.js';

/**
 * NoWaitWrites' group commit (issue #16, a miss's CPU): the writes asked for in one turn share
 * one transaction, each caller hears of its write only once that transaction has committed, a
 * write's own bug is rolled back alone, and a storage failure fails every write of the batch
 * with nothing of it left behind. Real SQLite files; a second connection is the observer.
 */
let dir: string;
let db: Database.Database;
let observer: Database.Database;
let gate: WriteGate;
let writes: NoWaitWrites;
const clock = new FakeClock(1_000_000);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tg-group-commit-'));
  db = new Database(join(dir, 'g.db'), { timeout: 250 });
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  observer = new Database(join(dir, 'g.db'), { timeout: 0 });
  gate = new WriteGate('g.db', { clock });
  writes = new NoWaitWrites(db, gate);
});
afterEach(() => {
  observer.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const rowsSeen = () => observer.prepare('SELECT count(*) FROM t').pluck().get() as number;
const insert = (on: Database.Database) => (id: number) => on.prepare('INSERT INTO t (id, v) VALUES (?, ?)').run(id, `v${id}`).changes;

describe('NoWaitWrites group commit', () => {
  it('commits the writes of one turn together, and each caller hears of its write only after the commit', async () => {
    const seenByOthers: number[] = [];
    const ins = insert(db);
    const done: number[] = [];
    const ps = [1, 2, 3, 4, 5].map((id) =>
      writes
        .run(() => {
          // Another connection sees committed rows only: with a commit per write it would see the earlier ones here.
          seenByOthers.push(rowsSeen());
          return ins(id);
        })
        .then((changes) => {
          done.push(rowsSeen());
          return changes;
        }),
    );
    expect(writes.queued).toBe(5);
    expect(rowsSeen()).toBe(0); // nothing written before the end of the turn
    expect(await Promise.all(ps)).toEqual([1, 1, 1, 1, 1]);
    expect(seenByOthers).toEqual([0, 0, 0, 0, 0]);
    expect(done).toEqual([5, 5, 5, 5, 5]);
  });

  it("rolls back a write that throws a bug of its own, alone; the batch's other writes commit", async () => {
    const ins = insert(db);
    const buggy = () =>
      db.transaction(() => {
        ins(20);
        throw new TypeError('a bug in one write');
      })();
    const results = await Promise.allSettled([writes.run(() => ins(10)), writes.run(buggy), writes.run(() => ins(30))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(TypeError);
    expect(observer.prepare('SELECT id FROM t ORDER BY id').pluck().all()).toEqual([10, 30]);
    expect(gate.state().ok).toBe(true); // a bug is not an outage
  });

  it('fails every write of the batch on a storage failure, leaves none of them, and shuts the gate', async () => {
    const ins = insert(db);
    const full = () => {
      ins(2);
      throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    };
    const results = await Promise.allSettled([writes.run(() => ins(1)), writes.run(full), writes.run(() => ins(3))]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(results.map((r) => ((r as PromiseRejectedResult).reason as { code: string }).code)).toEqual(['SQLITE_FULL', 'SQLITE_FULL', 'SQLITE_FULL']);
    expect(rowsSeen()).toBe(0);
    expect(gate.state()).toMatchObject({ ok: false, code: 'SQLITE_FULL' });
    // Shut: the next write is refused at once, before it is queued.
    expect(() => writes.run(() => ins(4))).toThrow(StorageUnavailable);
    expect(writes.queued).toBe(0);
  });

  it('retries a batch refused by a lock another connection holds, and commits it once the lock is free', async () => {
    const ins = insert(db);
    observer.exec('BEGIN IMMEDIATE');
    const ps = Promise.all([writes.run(() => ins(1)), writes.run(() => ins(2))]);
    await new Promise((r) => setTimeout(r, 20)); // refused and retried meanwhile, the event loop free
    expect(writes.queued).toBe(0);
    observer.exec('COMMIT');
    expect(await ps).toEqual([1, 1]);
    expect(rowsSeen()).toBe(2);
  });
});
