import Database from 'better-sqlite3';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { startStack, type Stack } from '../helpers/stack.js';

/*
 * A long report is answered as it is read: its first page is read before the answer starts,
 * from a read the store keeps open (on SQLite, a read transaction of the worker's on a
 * connection of its own). A client gone while that first page was read (an export clicked, then
 * the tab closed) left the read open for good: the answer's stream was destroyed before it had
 * asked for anything, so none of the generators between it and the store ever ran to close it.
 * On SQLite the open read pins the WAL (no checkpoint empties it); on the shared
 * backend it held one of the replica's two report connections.
 */
const TOKEN = 'admin-token-for-abandoned-exports-0123';
const DAY = 86_400_000;
let s: Stack;
beforeAll(async () => {
  s = await startStack({ clock: new FakeClock(Date.UTC(2026, 2, 30, 12)), config: { adminToken: TOKEN } });
  // Enough daily totals that the first page takes the worker a moment: the client is gone by then.
  const db = new Database(join(s.dataDir, 'tollgate.db'));
  const ins = db.prepare('INSERT INTO usage_daily VALUES (?, ?, ?, ?, ?, ?, ?, 0)');
  const today = Math.floor(Date.UTC(2026, 2, 30) / DAY);
  db.transaction(() => {
    for (let d = 1; d <= 200; d++) for (let k = 0; k < 100; k++) ins.run(today - d, `key_${k}`, 'profile', 3, 1, 2, 1);
  })();
  db.close();
});
afterAll(async () => s.close());

/**
 * Whether a checkpoint from a connection of its own can truncate tollgate.db's WAL, after a
 * write puts a frame in it: never while any connection holds a read transaction open (SQLite
 * answers SQLITE_BUSY, `busy` 1, rather than wait: busy_timeout 0).
 */
let probes = 0;
function walTruncates(): boolean {
  const db = new Database(join(s.dataDir, 'tollgate.db'));
  try {
    db.pragma('busy_timeout = 0');
    // A row of its own each time (a row written again as it was may write nothing), on a day no report here reads.
    db.prepare("INSERT INTO usage_daily VALUES (0, ?, 'profile', 0, 0, 0, 0, 0)").run(`key_probe_${++probes}`);
    const [r] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
    return r!.busy === 0;
  } catch {
    return false; // the write itself found the lock held
  } finally {
    db.close();
  }
}

/** True once a checkpoint truncates the WAL; false when none did in 5 s (the server's own checkpoints and writes may be under way). */
async function walTruncatesSoon(): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (walTruncates()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/** Sends `path` with the admin token and hangs up at once with a reset (as a proxy or a killed client does), reading nothing. */
function askAndHangUp(path: string): Promise<void> {
  const { hostname: host, port } = new URL(s.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port: Number(port) }, () => {
      socket.end(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`, () => {
        socket.resetAndDestroy();
        resolve();
      });
    });
    socket.on('error', reject);
  });
}

describe('a long report whose client hangs up while its first page is read', () => {
  const paths = ['/admin/usage/export.csv?from=2025-01-01', '/admin/usage?by=key,day&from=2025-01-01'];

  it.each(paths)('%s: the store read ends all the same', async (path) => {
    const whole = await s.get(path, { key: null, headers: { authorization: `Bearer ${TOKEN}` } });
    expect(whole.status).toBe(200);
    expect(await walTruncatesSoon()).toBe(true);
    const hungUp = () => s.logs.filter((l) => l.includes(`"path":"${path.split('?')[0]}"`) && l.includes('"status":499')).length;
    const before = hungUp();
    for (let i = 0; i < 5; i++) await askAndHangUp(path);
    // Read by the same worker after the five (it takes reads in order): they have had their first pages when this is answered.
    const again = await s.get(path, { key: null, headers: { authorization: `Bearer ${TOKEN}` } });
    expect(again.text).toBe(whole.text);
    // The five reached the gateway and were answered to nobody: each has its request line, 499 (client gone).
    for (let i = 0; i < 100 && hungUp() < before + 5; i++) await new Promise((r) => setTimeout(r, 50));
    expect(hungUp()).toBe(before + 5);
    // Each of the five had nobody to write to: its read ends all the same, and the WAL can be emptied again.
    expect(await walTruncatesSoon()).toBe(true);
  });
});
