import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { FakeClock } from '../../src/domain/clock.js';
import { validateConfig } from '../../src/config.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { fillDisk } from '../helpers/fill-disk.js';
import { ledgerTotals } from '../helpers/ledger-totals.js';
import { lineSink } from '../helpers/log-sink.js';
import { profileUrl, SIM_KEY } from '../helpers/stack.js';

/**
 * A reservation left by a process that died is charged when the next one starts (README,
 * "Credit budgets"). When tollgate.db cannot be written at that moment (here a full disk, a
 * real tmpfs; a process that crashed for want of space is restarted before any is freed), the
 * charge used to wait for yet another restart, weeks away maybe, and the budgets did not count
 * it meanwhile: a key whose dead call had spent its headroom was admitted past its budget.
 * Needs root for `mount`, as disk-full.test.ts.
 */
const clock = new FakeClock(Date.UTC(2026, 2, 11, 9, 0, 0));
let mountPoint: string;
let sim: Simulator;
let app: App | null = null;
let keep: Database.Database[] = [];

beforeAll(async () => {
  mountPoint = mkdtempSync(join(tmpdir(), 'tollgate-recovery-full-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m,mode=0700', 'tmpfs', mountPoint]);
  sim = await startSimulator({ apiKey: SIM_KEY });
});
afterAll(async () => {
  await app?.close();
  for (const db of keep) db.close();
  await sim.close();
  execFileSync('umount', ['-l', mountPoint]);
  rmSync(mountPoint, { recursive: true, force: true });
});

it("a dead process's reservation storage refuses at start counts in the budgets, and is charged once the disk has room", async () => {
  const dataDir = join(mountPoint, 'data');
  mkdirSync(dataDir);
  const config = validateConfig({ dataDir, server: { host: '127.0.0.1', port: 0 }, upstream: { url: sim.url, apiKey: SIM_KEY, retries: { baseDelayMs: 1, maxDelayMs: 5 } } });
  const logs: string[] = [];
  const boot = () => createApp(config, { clock, logDestination: lineSink(logs) });
  const first = boot();
  const key = first.keys.create({ name: 'budgeted', credits: '5/day' });
  await first.close();

  // What a process killed mid-call leaves behind: its reservation of 3 (the profile estimate).
  // Connections held open keep both databases' -wal and -shm files, so the next start needs no
  // new space until it writes: its recovery is the first write the full disk refuses.
  keep = ['tollgate.db', 'cache.db'].map((f) => new Database(join(dataDir, f)));
  const [main, cache] = keep as [Database.Database, Database.Database];
  main
    .prepare('INSERT INTO reservations (request_id, ts, key_id, endpoint, identity, estimate, scopes) VALUES (?, ?, ?, ?, ?, ?, ?)')
    .run('req_dead_process_call', clock.now() - 60_000, key.key.id, 'profile', null, 3, JSON.stringify([key.key.id, 'provider']));
  for (const db of keep) db.pragma('wal_checkpoint(TRUNCATE)');
  void cache;
  const filler = join(mountPoint, 'filler');
  fillDisk(filler);
  try {
    app = boot();
  } finally {
    unlinkSync(filler);
  }
  expect(logs.some((l) => l.includes('SQLITE_FULL') && l.includes('previous process'))).toBe(true);
  const url = await app.listen();
  clock.advance(10_000); // past the write gate's backoff

  // 3 of the day's 5 credits went to the dead call: another call estimated at 3 must be refused.
  const r = await request(`${url}/v1/profile?${profileUrl('after-recovery-refused')}&strategy=fetch`, { headers: { authorization: `Bearer ${key.secret}` } });
  expect(r.statusCode).toBe(429);
  expect(((await r.body.json()) as { error: { code: string } }).error.code).toBe('CREDIT_LIMIT_EXCEEDED');
  expect(sim.callCount()).toBe(0);

  // Charged without another restart, now that the disk has room.
  const until = Date.now() + 10_000;
  while (ledgerTotals({ app }).credits < 3 && Date.now() < until) await new Promise((res) => setTimeout(res, 25));
  expect(ledgerTotals({ app })).toMatchObject({ credits: 3, unsettled: 3 });
  expect(main.prepare('SELECT count(*) FROM reservations').pluck().get()).toBe(0);
  expect(app.costs.budgets.inFlight()).toBe(0);
  expect(app.costs.budgets.reserved(key.key.id)).toBe(0);
});
