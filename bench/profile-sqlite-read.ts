/**
 * What one hit's SQLite read costs, split (`npx tsx bench/profile-sqlite-read.ts [entries]`,
 * default 1,000,000): a cache.db filled as benchmark 4 fills it, then, in this process with
 * better-sqlite3 alone, 300,000 reads of benchmark 4's uniform ids (128k distinct) per variant,
 * CPU µs per read (user + system). The variants take one part away at a time: the row's
 * data and meta decoded into JS strings (read as their length instead), the row itself (the key
 * index alone), the per-read transaction (32 reads in one), page misses (a bigger page cache,
 * mmap). Run it under `strace -c -f` to count the system calls behind each read. Not part of
 * `npm run bench`: a tool (BENCHMARKS.md §4, "where a 1M hit's CPU goes").
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { populate, profileKey, profileTemplates } from './lib/populate.js';
import { startSimulator } from './lib/procs.js';
import { rng } from './lib/random.js';
import { entityId, SIM_KEY } from './lib/stack.js';

const n = Number(process.argv[2] ?? 1_000_000);
const WARM = 100_000;
const READS = 300_000;
const COLUMNS = 'rowid, endpoint, identity, status, data, meta, error_code, error_message, stored_at, fresh_as_of, credits, size';
/** Tollgate's hit read (src/store/sqlite/cache-statements.ts). */
const FULL = `SELECT ${COLUMNS} FROM entries WHERE key = ?`;

function variant(file: string, keys: readonly string[], name: string, o: { sql?: string; cacheKiB?: number; perTxn?: number; mmap?: number } = {}): void {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma(`cache_size = -${o.cacheKiB ?? 2048}`);
  if (o.mmap) db.pragma(`mmap_size = ${o.mmap}`);
  const stmt = db.prepare(o.sql ?? FULL).raw();
  const [begin, commit] = [db.prepare('BEGIN'), db.prepare('COMMIT')];
  const perTxn = o.perTxn ?? 1;
  let found = 0;
  const reads = (from: number, to: number) => {
    for (let i = from; i < to; i += perTxn) {
      if (perTxn > 1) begin.run();
      for (let j = i; j < Math.min(to, i + perTxn); j++) if (stmt.get(keys[j]!)) found++;
      if (perTxn > 1) commit.run();
    }
  };
  reads(0, WARM);
  const c0 = process.cpuUsage();
  reads(WARM, WARM + READS);
  const cpu = process.cpuUsage(c0);
  db.close();
  if (found !== WARM + READS) throw new Error(`${name}: ${WARM + READS - found} keys not found`);
  console.log(`| ${name} | ${((cpu.user + cpu.system) / READS).toFixed(2)} | ${(cpu.system / READS).toFixed(2)} |`);
}

const sim = await startSimulator(SIM_KEY);
const templates = await profileTemplates(sim.url, SIM_KEY).finally(() => sim.stop());
const dir = mkdtempSync(join(tmpdir(), 'tollgate-sqlite-read-'));
try {
  await populate(dir, n, templates, Date.now());
  const file = join(dir, 'cache.db');
  // Benchmark 4's stream: 64 connections × 2,000 uniform ids.
  const r = rng(7);
  const ids = Array.from({ length: 128_000 }, () => Math.floor(r() * n));
  const keys = Array.from({ length: WARM + READS }, (_, i) => profileKey(entityId(ids[i % ids.length]!)));
  console.log(`${n.toLocaleString('en')} entries, CPU per read\n\n| Variant | µs | of which system |\n|---|---:|---:|`);
  variant(file, keys, "Tollgate's read (2 MiB page cache, a transaction per read)");
  variant(file, keys, 'data and meta not decoded (their length read)', { sql: FULL.replace('data, meta', 'length(data), length(meta)') });
  variant(file, keys, 'the key index alone (SELECT rowid)', { sql: 'SELECT rowid FROM entries WHERE key = ?' });
  variant(file, keys, '32 reads per transaction', { perTxn: 32 });
  variant(file, keys, '16 MiB page cache', { cacheKiB: 16_384 });
  variant(file, keys, '64 MiB page cache', { cacheKiB: 65_536 });
  variant(file, keys, '64 MiB page cache, 32 reads per transaction', { cacheKiB: 65_536, perTxn: 32 });
  variant(file, keys, 'mmap (4 GiB)', { mmap: 4 * 2 ** 30 });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
