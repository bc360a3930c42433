import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { CLI, exited, runCli } from '../helpers/cli.js';

/**
 * One `serve` per data directory (issue #13): the embedded backend counts short rate windows
 * in each process's memory, so a second server on the same directory would admit every limit
 * again. It must refuse to start, naming the directory and the shared backend; a `kill -9`
 * of the first must not leave a lock that blocks the next start.
 */
const SIM_KEY = 'sim_key_for_the_serve_lock_test_0123';
const LISTENING = /"url":"(http:\/\/127\.0\.0\.1:\d+)"[^\n]*"msg":"tollgate listening"/;
let sim: Simulator;
let env: Record<string, string>;
const dirs: string[] = [];
const children: ChildProcess[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'tollgate-lock-'));
  dirs.push(d);
  return d;
};

beforeAll(async () => {
  sim = await startSimulator({ apiKey: SIM_KEY });
  env = { TOLLGATE_UPSTREAM_URL: sim.url, TOLLGATE_UPSTREAM_API_KEY: SIM_KEY, TOLLGATE_LOG_LEVEL: 'info' };
});
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill('SIGKILL');
      await exited(c);
    }
  }
});
afterAll(async () => {
  await sim.close();
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

type Started = { listening: true; url: string; child: ChildProcess } | { listening: false; code: number | null; stderr: string };

/** `tollgate serve` on `dir`: resolves once it listens, or once it exits (whichever comes first). */
function serve(dir: string): Promise<Started> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dir], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve neither listened nor exited: ${out}${err}`)), 15_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d;
      const m = LISTENING.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ listening: true, url: m[1]!, child });
      }
    });
    child.stderr!.on('data', (d: Buffer) => (err += d));
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ listening: false, code, stderr: err });
    });
  });
}

async function listening(dir: string): Promise<{ url: string; child: ChildProcess }> {
  const s = await serve(dir);
  if (!s.listening) throw new Error(`serve exited (${s.code}): ${s.stderr}`);
  return s;
}

async function status(url: string, path: string, key?: string): Promise<number> {
  const res = await request(url + path, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  await res.body.dump();
  return res.statusCode;
}

/** The one line a second server prints: the directory, the other server, the shared backend. */
function expectRefused(s: Started, dir: string): void {
  expect(s.listening).toBe(false);
  if (s.listening) return;
  expect(s.code).toBe(1);
  expect(s.stderr.trim().split('\n')).toHaveLength(1);
  expect(s.stderr).toContain(`tollgate: data directory ${dir} is in use by another Tollgate server`);
  expect(s.stderr).toMatch(/TOLLGATE_DATABASE_URL and TOLLGATE_REDIS_URL/);
  expect(s.stderr).not.toMatch(/\n\s+at /);
}

describe('one `serve` per data directory', () => {
  it('a second serve on the same directory stops at startup with a message; the first goes on serving; another directory works', async () => {
    const dir = tempDir();
    const first = await listening(dir);
    expectRefused(await serve(dir), dir);
    expect(await status(first.url, '/healthz')).toBe(200);
    expect(await status(first.url, '/readyz')).toBe(200);
    expect(statSync(join(dir, 'serve.lock')).mode & 0o777).toBe(0o600);

    const other = await listening(tempDir());
    expect(await status(other.url, '/healthz')).toBe(200);
    // Commands run beside a server, as before: they take no lock.
    const created = await runCli(['keys', 'create', '--name', 'beside', '--json', '--data-dir', dir], env);
    expect(created.code).toBe(0);
    expect(await runCli(['cache', 'stats', '--data-dir', dir], env)).toMatchObject({ code: 0 });
    expect(await runCli(['usage', '--data-dir', dir], env)).toMatchObject({ code: 0 });
    // Seven processes started one after another (~7 s alone; past 20 s on a machine running two suites at once).
  }, 45_000);

  it('kill -9 of the server leaves no lock behind: the next serve on the directory starts', async () => {
    const dir = tempDir();
    const first = await listening(dir);
    first.child.kill('SIGKILL');
    await exited(first.child);
    const next = await listening(dir);
    expect(await status(next.url, '/readyz')).toBe(200);
    // …and holds the lock in its turn.
    expectRefused(await serve(dir), dir);
  });

  it('a 3/minute key gets 3 answers of 6, however the requests are spread over the processes started on its directory', async () => {
    const dir = tempDir();
    const created = await runCli(['keys', 'create', '--name', 'limited', '--rate', '3/minute', '--json', '--data-dir', dir], env);
    expect(created.code).toBe(0);
    const { key } = JSON.parse(created.stdout) as { key: string };
    const first = await listening(dir);
    const second = await serve(dir);
    const servers = [first.url, ...(second.listening ? [second.url] : [])];
    // Minute windows start at :00: six requests straddling one would be counted in two windows.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 57_000) await new Promise((r) => setTimeout(r, 60_100 - intoMinute));
    const statuses: number[] = [];
    // Alternating, so that two servers would each see three requests (each under its own limit).
    for (let i = 0; i < 6; i++) statuses.push(await status(servers[i % servers.length]!, `/v1/profile?person.id=${100 + i}`, key));
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(3);
    expectRefused(second, dir);
  });
});
