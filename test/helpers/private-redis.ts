import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from './free-port.js';

/**
 * A redis-server of the test's own (no persistence), on a free port, that the test may kill
 * and start again on the same port: the machine's shared Redis must never be stopped.
 */
export interface PrivateRedis {
  readonly url: string;
  /** `kill -9`, and wait for it to be gone. */
  kill(): Promise<void>;
  /** Start it again on the same port (empty: nothing was persisted). */
  start(): Promise<void>;
}

export async function privateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = () =>
    new Promise<void>((resolve, reject) => {
      const c = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = c;
      let out = '';
      const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${out}`)), 10_000);
      c.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        if (/Ready to accept connections/.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      });
      c.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      c.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server exited (${code}): ${out}`));
      });
    });
  const kill = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill('SIGKILL');
    await gone;
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, kill, start };
}
