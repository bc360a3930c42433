/**
 * What one hit's SQLite read costs, split (`npx tsx bench/profile-sqlite-read.ts [entries]`,
 * default 1,000,000): a cache.db filled as benchmark 4 fills it, then, in this process with
 * better-sqlite3 alone, 300,000 reads of benchmark 4's uniform ids (128k distinct) per variant,
 * CPU µs per read (user + system). The variants take one part away at a time: the row's
 * data and meta decoded into JS strings (read as their length instead), the row itself (the key
 * index alone), the per-read transaction (32 reads in one), page misses (a bigger page cache,
 * mmap), and two differences from benchmark 4's SQLite anchor (bench/lib/sqlite-anchor.ts):
 * the anchor's two columns, and no other connection committing (Tollgate's hit-count flush
 * commits on the writing connection while the reads run, which empties the reader's page cache:
 * here a second connection commits one `access` row every `writeEvery` reads, its own time taken
 * off the total, not off the system column), and the rest of a server's work between reads
 * (a walk over 256 KiB–4 MiB of memory, its own time taken off). Run it under `strace -c -f` to count the system calls behind each read. Not part of
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

/**
 * Other work between two reads, as a server does (parsing, answering, its other state): a
 * walk over `kib` KiB, a write per 64-byte line, which takes SQLite's pages out of the CPU's
 * caches. Its own CPU is measured alone and taken off the total.
 */
function churner(kib: number): { run(): void; usPer(times: number): number } {
  const buf = new Uint8Array(kib * 1024);
  const run = () => {
    for (let k = 0; k < buf.length; k += 64) buf[k]!++;
  };
  return {
    run,
    usPer(times) {
      const c0 = process.cpuUsage();
      for (let i = 0; i < times; i++) run();
      const c = process.cpuUsage(c0);
      return (c.user + c.system) / times;
    },
  };
}

function variant(file: string, keys: readonly string[], name: string, o: { sql?: string; cacheKiB?: number; perTxn?: number; mmap?: number; writeEvery?: number; churnKiB?: number } = {}): void {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma(`cache_size = -${o.cacheKiB ?? 2048}`);
  if (o.mmap) db.pragma(`mmap_size = ${o.mmap}`);
  const stmt = db.prepare(o.sql ?? FULL).raw();
  const [begin, commit] = [db.prepare('BEGIN'), db.prepare('COMMIT')];
  const perTxn = o.perTxn ?? 1;
  const writer = o.writeEvery ? new Database(file) : null;
  const write = writer?.prepare<[number]>('UPDATE access SET hits = hits + 1 WHERE id = ?');
  let writerMs = 0;
  const churn = o.churnKiB ? churner(o.churnKiB) : null;
  let found = 0;
  const reads = (from: number, to: number) => {
    for (let i = from; i < to; i += perTxn) {
      if (write && Math.floor(i / o.writeEvery!) !== Math.floor((i - perTxn) / o.writeEvery!)) {
        const t0 = performance.now();
        write.run(1 + (i % n));
        writerMs += performance.now() - t0;
      }
      if (perTxn > 1) begin.run();
      for (let j = i; j < Math.min(to, i + perTxn); j++) {
        if (stmt.get(keys[j]!)) found++;
        churn?.run();
      }
      if (perTxn > 1) commit.run();
    }
  };
  reads(0, WARM);
  writerMs = 0;
  const c0 = process.cpuUsage();
  reads(WARM, WARM + READS);
  const cpu = process.cpuUsage(c0);
  db.close();
  writer?.close();
  if (found !== WARM + READS) throw new Error(`${name}: ${WARM + READS - found} keys not found`);
  const churnUs = churn ? churn.usPer(READS) : 0;
  console.log(`| ${name} | ${((cpu.user + cpu.system - writerMs * 1000) / READS - churnUs).toFixed(2)} | ${(cpu.system / READS).toFixed(2)} |`);
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
  // Against the anchor: Tollgate's read as the server makes it (a turn's reads share a transaction).
  variant(file, keys, 'the anchor\'s read: data and meta only, 32 reads per transaction', { sql: 'SELECT data, meta FROM entries WHERE key = ?', perTxn: 32 });
  variant(file, keys, 'another connection commits a row every 400 reads, 32 reads per transaction', { perTxn: 32, writeEvery: 400 });
  variant(file, keys, 'another connection commits a row every 64 reads, 32 reads per transaction', { perTxn: 32, writeEvery: 64 });
  // Inside a server the read shares the CPU's caches with the rest of each request's work.
  for (const kib of [256, 1024, 4096]) {
    variant(file, keys, `the anchor's read (a transaction per read), ${kib} KiB walked between reads`, { sql: 'SELECT data, meta FROM entries WHERE key = ?', churnKiB: kib });
    variant(file, keys, `32 reads per transaction, ${kib} KiB walked between reads`, { perTxn: 32, churnKiB: kib });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
