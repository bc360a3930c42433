import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import type { NewEntry } from '../../src/domain/cache-entry.js';
import { openBackend } from '../../src/store/open.js';
import type { SqliteBackend } from '../../src/store/sqlite/backend.js';
import { Checkpointer } from '../../src/store/sqlite/checkpointer.js';
import { LOOK_INTERVAL_MS } from '../../src/store/sqlite/data-version.js';
import { TurnReads } from '../../src/store/sqlite/turn-reads.js';

/*
 * The server's hit reads share one read transaction per event-loop turn (turn-reads.ts). Every
 * case runs synchronously, inside one turn, where the shared snapshot is open: what a request
 * reads must still see every commit it would have seen reading alone.
 */

let dir = '';
const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function entry(key: string, data = `{"id":"${key}"}`): NewEntry {
  return { key, endpoint: 'profile', identity: key, status: 200, data, meta: '{}', errorCode: null, errorMessage: null, storedAt: 1_000, freshAsOf: 1_000, credits: 1 };
}

/** A server backend with nothing held in memory, so that every get is a SQLite read; and a second connection, as the CLI's. */
function serverAndCli(keys: string[]): { server: SqliteBackend; cli: Database.Database } {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-turn-reads-'));
  const server = openBackend(validateConfig({ dataDir: dir, cache: { memoryMaxBytes: 0 } }), { role: 'server', upstreamUrl: 'http://127.0.0.1:9' }) as SqliteBackend;
  closers.push(() => server.close());
  for (const k of keys) server.cacheStore.put(entry(k));
  const cli = new Database(join(dir, 'cache.db'));
  closers.push(() => cli.close());
  return { server, cli };
}

/** Blocks the thread (the turn goes on) until `ms` have passed. */
function spin(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe('turn reads', () => {
  it("a turn's second and later reads share one snapshot, and the next turn reads afresh", async () => {
    const { cli } = serverAndCli(['a', 'b', 'c']);
    const reads = new TurnReads(join(dir, 'cache.db'), 0);
    closers.push(() => reads.close());
    expect(reads.row('a')).toBeDefined(); // alone
    expect(reads.row('b')).toBeDefined(); // opens the turn's snapshot
    cli.prepare('DELETE FROM entries WHERE key = ?').run('c');
    expect(reads.row('c')).toBeDefined(); // the snapshot predates the delete
    await new Promise((r) => setImmediate(r));
    expect(reads.row('c')).toBeUndefined();
  });

  it("a put made in the same turn is read back, though the turn's snapshot was open", () => {
    const { server } = serverAndCli(['a', 'b']);
    const store = server.cacheStore;
    expect(store.get('a')).not.toBeNull();
    expect(store.get('b')).not.toBeNull();
    expect(store.get('new')).toBeNull();
    expect(store.put(entry('new'))).toBe(true);
    expect(store.get('new')?.data).toBe('{"id":"new"}');
    expect(store.put({ ...entry('a', '{"v":2}'), storedAt: 2_000 })).toBe(true);
    expect(store.get('a')?.data).toBe('{"v":2}');
  });

  it("the server's own purge in the same turn is never read past", () => {
    const { server } = serverAndCli(['a', 'b', 'c']);
    const store = server.cacheStore;
    expect(store.get('a')).not.toBeNull();
    expect(store.get('b')).not.toBeNull();
    expect(store.purgeBatch({ identity: 'c' }, store.lastRowid(), 10)).toBe(1);
    expect(store.get('c')).toBeNull();
    expect(store.purge({ identity: 'b' })).toBe(1);
    expect(store.get('b')).toBeNull();
  });

  it("another connection's purge is read by a request made LOOK_INTERVAL_MS after it, in the same turn (the CLI's promise)", () => {
    const { server, cli } = serverAndCli(['a', 'b', 'c']);
    const store = server.cacheStore;
    expect(store.get('a')).not.toBeNull();
    expect(store.get('b')).not.toBeNull(); // the snapshot is open
    cli.prepare('DELETE FROM entries WHERE key = ?').run('c');
    spin(LOOK_INTERVAL_MS + 1); // the CLI returns no sooner than this after its commit
    expect(store.get('c')).toBeNull();
  });

  it("a busy loop of turn reads does not keep the Checkpointer from truncating the WAL", async () => {
    const keys = Array.from({ length: 64 }, (_, i) => `k${i}`);
    const { server, cli } = serverAndCli(keys);
    const store = server.cacheStore;
    const file = join(dir, 'cache.db');
    // Another process's writes: they end no snapshot of the server's by themselves.
    cli.exec('CREATE TABLE scratch (v TEXT)');
    const write = cli.prepare('INSERT INTO scratch VALUES (?)');
    const wal = () => statSync(`${file}-wal`).size;
    const checkpointer = new Checkpointer([file], { intervalMs: 20, truncateAboveBytes: 256 * 1024, onError: () => {} });
    closers.push(() => checkpointer.close());
    // Every turn: eight SQLite reads (its snapshot open from the second on) and, every fourth, ~8 KB written by the other connection.
    let turn = 0;
    let largest = 0;
    let truncatedAfterLargest = false;
    const until = performance.now() + 4_000;
    while (performance.now() < until && !truncatedAfterLargest) {
      for (let i = 0; i < 8; i++) expect(store.get(keys[(turn * 8 + i) % keys.length]!)).not.toBeNull();
      if (turn % 4 === 0) write.run('x'.repeat(8_000));
      const size = wal();
      if (size > 256 * 1024) largest = Math.max(largest, size);
      else if (largest > 0) truncatedAfterLargest = true;
      turn++;
      await new Promise((r) => setImmediate(r));
    }
    expect(largest).toBeGreaterThan(256 * 1024);
    expect(truncatedAfterLargest).toBe(true);
  });
});
