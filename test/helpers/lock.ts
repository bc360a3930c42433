import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

/** The driver's resolved path, so the child needs no module resolution of its own. */
const DRIVER = createRequire(import.meta.url).resolve('better-sqlite3');

/**
 * Another process holding a SQLite file's write lock (`BEGIN IMMEDIATE`), as the CLI, a
 * backup tool or a second gateway would. Resolves once the lock is held; `release()` commits
 * and waits for the process to exit. The child gives the lock up by itself after `maxMs`,
 * so a failing test can never leave it behind.
 */
export async function holdWriteLock(file: string, maxMs = 15_000): Promise<{ release(): Promise<void> }> {
  const script = `
    const Database = require(${JSON.stringify(DRIVER)});
    const db = new Database(${JSON.stringify(file)}, { timeout: 5000 });
    db.exec('BEGIN IMMEDIATE');
    process.stdout.write('locked\\n');
    const done = () => { try { db.exec('COMMIT'); db.close(); } finally { process.exit(0); } };
    process.stdin.on('data', done);
    setTimeout(done, ${maxMs});
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('locked')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`lock holder exited (${code}) before taking the lock`)));
  });
  return {
    async release() {
      child.stdin.end('release\n');
      await exited;
    },
  };
}
