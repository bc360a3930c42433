/**
 * What the ledger writes per hit, in-process (no HTTP): `npx tsx bench/hit-writes.ts [<before>]`,
 * after `npm run build`. Records HITS zero-credit rows into the embedded LedgerStore of a build
 * (dist/ of this checkout, and optionally of another checkout `<before>`, for a ratio) at
 * RATE hits a second of the fake clock over KEYS keys and both lookup endpoints, flushing once
 * per simulated second as the server's timer does, and reports:
 * - WAL bytes written (wal_autocheckpoint off, so the -wal file holds every frame),
 * - CPU per hit of record() + flush() (process.cpuUsage, user + system),
 * - rows added to the database.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const HITS = 100_000;
const RATE = 36_000;
const KEYS = 20;
const RUNS = 3;

interface Result {
  walBytes: number;
  cpuUsPerHit: number;
  ledgerRows: number;
}

async function measure(dist: string): Promise<Result> {
  const { openDatabase } = (await import(join(dist, 'store/sqlite/db.js'))) as typeof import('../src/store/sqlite/db.js');
  const { MAIN_MIGRATIONS } = (await import(join(dist, 'store/sqlite/schema.js'))) as typeof import('../src/store/sqlite/schema.js');
  const { BudgetStore } = (await import(join(dist, 'store/sqlite/budgets.js'))) as typeof import('../src/store/sqlite/budgets.js');
  const { LedgerStore } = (await import(join(dist, 'store/sqlite/ledger.js'))) as typeof import('../src/store/sqlite/ledger.js');
  const best: Result[] = [];
  for (let run = 0; run < RUNS; run++) {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-hit-writes-'));
    try {
      const file = join(dir, 'tollgate.db');
      const db = openDatabase(file, MAIN_MIGRATIONS);
      db.pragma('wal_autocheckpoint = 0');
      db.pragma('wal_checkpoint(TRUNCATE)');
      const ledger = new LedgerStore(db, new BudgetStore(db), { flushEveryMs: 3_600_000 });
      const t0 = Date.UTC(2026, 0, 1, 10);
      const perSecond = RATE;
      const cpu0 = process.cpuUsage();
      for (let i = 0; i < HITS; i++) {
        ledger.record({
          requestId: `req_${run}_${i}`,
          ts: t0 + Math.floor((i * 1000) / RATE),
          keyId: `key_${i % KEYS}`,
          endpoint: i % 2 ? 'profile' : 'company',
          identity: `profile:person.id:${i % 50_000}`,
          cache: 'HIT',
          status: 200,
          code: null,
          credits: 0,
          creditsSaved: 3,
          upstreamMs: null,
          totalMs: 0.4,
          upstreamRequestId: null,
        });
        if ((i + 1) % perSecond === 0) ledger.flush();
      }
      ledger.flush();
      const cpu = process.cpuUsage(cpu0);
      const walBytes = statSync(`${file}-wal`).size;
      const ledgerRows = db.prepare('SELECT COUNT(*) FROM ledger').pluck().get() as number;
      db.close();
      best.push({ walBytes, cpuUsPerHit: (cpu.user + cpu.system) / HITS, ledgerRows });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return best.sort((a, b) => a.cpuUsPerHit - b.cpuUsPerHit)[0]!;
}

const after = await measure(resolve('dist'));
const beforeDir = process.argv[2];
const before = beforeDir ? await measure(resolve(beforeDir, 'dist')) : null;
const per10k = (r: Result) => (r.walBytes / HITS) * 10_000;
const show = (name: string, r: Result) =>
  console.log(`${name}: WAL ${(per10k(r) / 1024).toFixed(1)} KiB per 10k hits, CPU ${r.cpuUsPerHit.toFixed(2)} µs per hit, ${r.ledgerRows} ledger rows for ${HITS} hits`);
if (before) show('before', before);
show('after', after);
if (before) console.log(`ratio after/before: WAL bytes ${(after.walBytes / before.walBytes).toFixed(4)}, CPU ${(after.cpuUsPerHit / before.cpuUsPerHit).toFixed(3)}`);
