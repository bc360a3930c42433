import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './free-port.js';

/**
 * A PostgreSQL server of the test's own (initdb in a temporary directory, a free port), that
 * the test may crash and start again: the machine's server, which every other test uses, must
 * never be stopped. Run as the `postgres` user when the tests run as root (PostgreSQL refuses
 * root). fsync is off: this server holds nothing worth a disk sync.
 */
export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  url(database: string): string;
  /** A crash: SIGQUIT, immediate shutdown without a checkpoint (recovery runs at the next start). */
  crash(): Promise<void>;
  /** Start it again on the same port and data directory. */
  start(): Promise<void>;
  close(): Promise<void>;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (existsSync(join(root, v, 'bin', 'postgres'))) return join(root, v, 'bin');
  throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql (apt-get install postgresql)');
}

/** uid and gid of the `postgres` user when running as root, to drop to. */
function owner(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  return { uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()) };
}

export async function privatePostgres(): Promise<PrivatePostgres> {
  const bin = binDir();
  const as = owner();
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-pg-'));
  if (as) chownSync(dir, as.uid, as.gid);
  const data = join(dir, 'data');
  execFileSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'], { stdio: 'ignore', ...(as ?? {}) });
  const port = await freePort();
  let child: ChildProcess | null = null;
  const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;

  const start = async () => {
    const args = ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'full_page_writes=off'];
    child = spawn(join(bin, 'postgres'), args, { stdio: 'ignore', ...(as ?? {}) });
    const until = Date.now() + 20_000;
    for (;;) {
      const c = new pg.Client({ connectionString: url('postgres'), connectionTimeoutMillis: 1_000 });
      try {
        await c.connect();
        await c.end();
        return;
      } catch (err) {
        await c.end().catch(() => {});
        if (Date.now() > until || child.exitCode !== null) throw new Error(`private PostgreSQL did not start: ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const stop = async (signal: NodeJS.Signals) => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill(signal);
    await gone;
  };
  await start();
  return {
    url,
    crash: () => stop('SIGQUIT'),
    start,
    async close() {
      await stop('SIGQUIT');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
