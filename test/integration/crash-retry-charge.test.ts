import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { exited, runCli, serveCli, serveEnv } from '../helpers/cli.js';

/**
 * `kill -9` while a call is being retried after a billed 512: the provider charged the first
 * attempt (its answer said so) and charges the second, whose answer the dead process never
 * sees. The durable reservation must cover both, so the next process's recovery charges
 * everything the provider billed, not the estimate of one attempt.
 */
const SIM_KEY = 'sim_key_for_the_retry_crash_test_0123456';
let sim: Simulator;
let dataDir: string;
let env: Record<string, string>;

beforeAll(async () => {
  sim = await startSimulator({ apiKey: SIM_KEY });
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-retry-crash-'));
  const config = join(dataDir, 'tollgate.yaml');
  // The backoff is short, so the retry is in flight well before the slow answer comes.
  writeFileSync(config, 'upstream:\n  retries:\n    baseDelayMs: 10\n    maxDelayMs: 10\n');
  env = serveEnv(dataDir, { url: sim.url, key: SIM_KEY }, { TOLLGATE_CONFIG: config });
});

afterAll(async () => {
  await sim.close();
  rmSync(dataDir, { recursive: true, force: true });
});

it('a retry after a billed 512, cut by kill -9: the next start charges the 512 and the retry', async () => {
  const created = await runCli(['keys', 'create', '--name', 'retry-crash', '--json'], env);
  expect(created.code).toBe(0);
  const secret = (JSON.parse(created.stdout) as { key: string }).key;

  const first = await serveCli(env);
  const url = first.url;
  // The first attempt: a 512 that says it charged 1 credit. The retry: performed and billed (3), answered too late.
  sim.inject({ fault: { kind: 'status', status: 512, credits: 1 }, times: 1 });
  sim.inject({ fault: { kind: 'latency', ms: 5_000 }, times: 1 });
  const pending = request(`${url}/v1/profile?url=${encodeURIComponent('https://www.linkedin.com/in/retry-crash')}&strategy=fetch`, {
    headers: { authorization: `Bearer ${secret}` },
  }).then(
    (r) => r.statusCode,
    () => 'cut' as const,
  );
  const end = Date.now() + 10_000;
  while (sim.callCount() < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  expect(sim.callCount()).toBe(2);
  first.child.kill('SIGKILL');
  await exited(first.child);
  expect(await pending).toBe('cut');
  expect(sim.creditsCharged()).toBe(4);

  // The next process charges what the dead one left in flight, before it serves.
  const second = await serveCli(env);
  second.child.kill('SIGTERM');
  await exited(second.child);
  expect(second.output()).toMatch(/charged provider calls left in flight by a previous process/);

  const usage = await runCli(['usage', '--json'], env);
  expect(usage.code).toBe(0);
  const rows = JSON.parse(usage.stdout) as Array<{ credits: number; unsettled_credits: number; requests: number }>;
  expect(rows.reduce((a, r) => a + r.credits, 0)).toBe(sim.creditsCharged());
  expect(rows.reduce((a, r) => a + r.requests, 0)).toBe(1);
}, 60_000);
