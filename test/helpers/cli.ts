import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const CLI = join(import.meta.dirname, '../../dist/cli.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run the built CLI as a user would (`npm test` builds dist first). */
export function runCli(args: string[], env: Record<string, string> = {}, timeoutMs = 15_000, spawnOpts: { cwd?: string; uid?: number; gid?: number } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], ...spawnOpts });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const t = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`CLI ${args.join(' ')} timed out; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(t);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Start a long-running CLI command and wait until its stdout matches `ready`. */
export function startCli(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  timeoutMs = 20_000,
  cwd?: string,
): Promise<{ child: ChildProcess; output: () => string; match: RegExpMatchArray }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], cwd });
    let out = '';
    const t = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`CLI ${args.join(' ')} not ready; output: ${out}`));
    }, timeoutMs);
    const onData = (d: Buffer) => {
      out += d;
      const m = out.match(ready);
      if (m) {
        clearTimeout(t);
        resolve({ child, output: () => out, match: m });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d) => (out += d));
    child.on('exit', (code) => {
      clearTimeout(t);
      reject(new Error(`CLI exited early (${code}): ${out}`));
    });
  });
}

/** The "tollgate listening" log line; its URL is group 1 or 2 (pino may write the fields in either order). */
export const LISTENING = /"url":"(http:\/\/[^"]+)"[^\n]*tollgate listening|tollgate listening[^\n]*"url":"(http:\/\/[^"]+)"/;

/**
 * The environment of a `tollgate serve` in front of `upstream`, on loopback and a port the
 * kernel picks, logging at info (so that it says where it listens); `more` adds or overrides.
 */
export function serveEnv(dataDir: string, upstream: { url: string; key: string }, more: Record<string, string> = {}): Record<string, string> {
  return {
    TOLLGATE_DATA_DIR: dataDir,
    TOLLGATE_UPSTREAM_URL: upstream.url,
    TOLLGATE_UPSTREAM_API_KEY: upstream.key,
    TOLLGATE_HOST: '127.0.0.1',
    TOLLGATE_PORT: '0',
    TOLLGATE_LOG_LEVEL: 'info',
    ...more,
  };
}

/** `tollgate serve` as its own process (the built CLI); resolves with its base URL once it listens. */
export async function serveCli(env: Record<string, string>, timeoutMs = 20_000): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const s = await startCli(['serve'], env, LISTENING, timeoutMs);
  return { child: s.child, url: (s.match[1] ?? s.match[2])!, output: s.output };
}

/** Wait for a child to exit; resolves its exit code. */
export function exited(child: ChildProcess, timeoutMs = 15_000): Promise<number | null> {
  return new Promise((resolve, reject) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    const t = setTimeout(() => reject(new Error('child did not exit')), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(t);
      resolve(code);
    });
  });
}
