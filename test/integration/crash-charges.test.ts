import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { exited, runCli, serveCli, serveEnv } from '../helpers/cli.js';

/**
 * `kill -9` of a gateway with paid provider calls in flight (issue #11 §1): the provider bills
 * calls whose answers the dead process never saw. Their reservations were durable before the
 * calls went out, so the next process charges them (at their estimates, marked unsettled) and
 * the ledger holds every credit the provider charged.
 */
const SIM_KEY = 'sim_key_for_the_crash_test_0123456789';
const CALLS = 64;
let sim: Simulator;
let dataDir: string;
let env: Record<string, string>;

beforeAll(async () => {
  // Slow enough that every call is still in flight at the provider when the gateway dies.
  sim = await startSimulator({ apiKey: SIM_KEY, latencyMs: 2_000 });
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-crash-'));
  // Every call goes out at once: none waits in the gateway's queue (one key may hold every slot).
  const config = join(dataDir, 'tollgate.yaml');
  writeFileSync(config, `upstream:\n  maxConcurrency: ${CALLS}\n  teamSharePercent: 100\n  connections: ${CALLS}\n`);
  env = serveEnv(dataDir, { url: sim.url, key: SIM_KEY }, { TOLLGATE_CONFIG: config });
});

afterAll(async () => {
  await sim.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function waitFor(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('kill -9 under paid load', () => {
  it('the ledger holds every credit the provider charged for the calls in flight', async () => {
    const created = await runCli(['keys', 'create', '--name', 'crash-team', '--json'], env);
    expect(created.code).toBe(0);
    const secret = (JSON.parse(created.stdout) as { key: string }).key;

    const first = await serveCli(env);
    const pending = Array.from({ length: CALLS }, (_, i) =>
      request(`${first.url}/v1/profile?url=${encodeURIComponent(`https://www.linkedin.com/in/crash-${i}`)}&strategy=fetch`, {
        headers: { authorization: `Bearer ${secret}` },
      }).then(
        (r) => r.statusCode,
        () => 'cut' as const,
      ),
    );
    await waitFor(() => sim.callCount() >= CALLS, 'every call to reach the provider');
    first.child.kill('SIGKILL');
    await exited(first.child);
    const answered = await Promise.all(pending);
    expect(answered.filter((a) => a !== 'cut')).toEqual([]);
    // The provider performed and billed every lookup, whether or not anyone read the answer.
    expect(sim.creditsCharged()).toBe(CALLS * 3);

    // The next process charges what the dead one left in flight, before it serves.
    const second = await serveCli(env);
    second.child.kill('SIGTERM');
    await exited(second.child);
    expect(second.output()).toMatch(/charged provider calls left in flight by a previous process/);

    const usage = await runCli(['usage', '--json'], env);
    expect(usage.code).toBe(0);
    const rows = JSON.parse(usage.stdout) as Array<{ credits: number; unsettled_credits: number; requests: number }>;
    const credits = rows.reduce((a, r) => a + r.credits, 0);
    expect(credits).toBeGreaterThanOrEqual(sim.creditsCharged());
    expect(credits).toBe(CALLS * 3);
    expect(rows.reduce((a, r) => a + r.unsettled_credits, 0)).toBe(CALLS * 3);
    expect(rows.reduce((a, r) => a + r.requests, 0)).toBe(CALLS);
  }, 60_000);
});
