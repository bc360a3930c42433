/**
 * A writer on the event loop against the Checkpointer's WAL truncations, by hand
 * (`npx tsx bench/checkpoint-writes.ts [blocking|no-wait] [seconds]`): the main thread commits a
 * 1.5 KB row with two indexes 1,000 times a second while the Checkpointer's worker, at a 16 MiB
 * threshold, truncates the WAL about every second. `blocking` waits for the lock in SQLite's busy
 * handler (250 ms, as the server's writes did); `no-wait` goes through NoWaitWrites (a timer's
 * retry). Prints the event loop's longest gap (a 1 ms interval) and the writes' own latency, from
 * when each was due. Diagnosis only: it writes nothing to BENCHMARKS.md.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../src/domain/clock.js';
import { Checkpointer } from '../src/store/sqlite/checkpointer.js';
import { openDatabase } from '../src/store/sqlite/db.js';
import { NoWaitWrites } from '../src/store/sqlite/no-wait.js';
import { isPromise } from '../src/store/ports.js';
import { WriteGate } from '../src/store/write-gate.js';

const mode = process.argv[2] === 'no-wait' ? 'no-wait' : 'blocking';
const seconds = Number(process.argv[3] ?? 15);
const dir = mkdtempSync(join(tmpdir(), 'tollgate-ckw-'));
const file = join(dir, 'w.db');
const db = openDatabase(file, [(d) => d.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v TEXT, ts INTEGER); CREATE INDEX t_k ON t (k); CREATE INDEX t_ts ON t (ts)')], {
  autoCheckpoint: false,
  busyTimeoutMs: 250,
});
const gate = new WriteGate('w.db', { clock: systemClock });
const noWait = new NoWaitWrites(db, gate);
const insert = db.prepare('INSERT INTO t (k, v, ts) VALUES (?, ?, ?)');
const body = 'x'.repeat(1500);
let truncations = 0;
const ck = new Checkpointer([file], { intervalMs: 100, truncateAboveBytes: Number(process.env.TRUNCATE_MIB ?? 16) * 1024 * 1024, onError: (e) => console.error(e) });

const latencies: number[] = [];
let failures = 0;
let maxGap = 0;
let last = performance.now();
let walBytes = 0;
const walSize = () => {
  try {
    return statSync(`${file}-wal`).size;
  } catch {
    return 0;
  }
};
const probe = setInterval(() => {
  const now = performance.now();
  const w = walSize();
  if (w < walBytes / 2) truncations++;
  walBytes = w;
  maxGap = Math.max(maxGap, now - last);
  last = now;
}, 1);

async function main(): Promise<void> {
  const t0 = performance.now();
  let i = 0;
  const pending: Promise<void>[] = [];
  while (performance.now() - t0 < seconds * 1000) {
    const due = t0 + i;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const n = i++;
    const write = () => void insert.run(`k${n % 5000}`, body, Date.now());
    try {
      const w = mode === 'no-wait' ? noWait.run(write) : gate.run(write);
      if (isPromise(w)) pending.push(w.then(() => void latencies.push(performance.now() - due), () => void failures++));
      else latencies.push(performance.now() - due);
    } catch {
      failures++;
    }
  }
  await Promise.all(pending);
  clearInterval(probe);
  await ck.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
  latencies.sort((a, b) => a - b);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!.toFixed(1);
  console.log(
    `${mode}: ${latencies.length} writes, ${failures} failed; write latency p50 ${q(0.5)} / p99 ${q(0.99)} / max ${q(1)} ms; ` +
      `over 20 ms: ${latencies.filter((x) => x > 20).length}; WAL truncations ${truncations}; event-loop longest gap ${maxGap.toFixed(1)} ms; load ${loadavg().map((x) => x.toFixed(2)).join(', ')}`,
  );
}
void main();
