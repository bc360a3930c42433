import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { exited, runCli, serveCli, serveEnv } from '../helpers/cli.js';
import { freshDatabase } from '../helpers/postgres.js';
import { REDIS_URL } from '../helpers/redis.js';

/**
 * Hits are counted in memory and written as counts once a second (store/usage-tally.ts), so a
 * `kill -9` of `tollgate serve` under a hit load can lose the hits it answered since its last
 * flush — at most about a second's worth — and never a charge; a clean stop loses nothing.
 * Measured here on both backends: the hits the clients saw answered against what
 * `tollgate usage` counts afterwards.
 */
const SIM_KEY = 'sim_key_for_the_hit_count_test_0123456789';
/** The ledger's flush interval (LedgerStore, the shared backend's flush timer). */
const FLUSH_MS = 1_000;
/** Scheduling slack on a loaded 2-core machine: the flush timer's own lateness, the answer's way back to the client. */
const SLACK_MS = 750;
const CLIENTS = 16;
const LOAD_MS = 4_000;
const PROFILE = `/v1/profile?url=${encodeURIComponent('https://www.linkedin.com/in/hit-count')}`;

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ apiKey: SIM_KEY });
});
afterAll(async () => {
  await sim.close();
});

/** `CLIENTS` loops of hits until stop(); resolves the time (ms) each answer arrived. */
function hitLoad(url: string, secret: string): { stop(): Promise<number[]> } {
  const pool = new Pool(url, { connections: CLIENTS });
  const answered: number[] = [];
  let running = true;
  const loops = Array.from({ length: CLIENTS }, async () => {
    while (running) {
      try {
        const r = await pool.request({ path: PROFILE, method: 'GET', headers: { authorization: `Bearer ${secret}` } });
        await r.body.dump();
        answered.push(Date.now());
      } catch {
        return; // the server died: this request was never answered
      }
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      await pool.destroy().catch(() => {});
      return answered;
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function counted(env: Record<string, string>): Promise<{ requests: number; credits: number }> {
  const u = await runCli(['usage', '--json'], env);
  expect(u.code, u.stderr).toBe(0);
  const rows = JSON.parse(u.stdout) as Array<{ requests: number; credits: number }>;
  return { requests: rows.reduce((n, r) => n + r.requests, 0), credits: rows.reduce((n, r) => n + r.credits, 0) };
}

const backends: Array<[string, () => Promise<{ env: Record<string, string>; drop(): Promise<void> }>]> = [
  ['embedded', async () => ({ env: {}, drop: async () => {} })],
  [
    'shared',
    async () => {
      const db = await freshDatabase();
      return { env: { TOLLGATE_DATABASE_URL: db.url, TOLLGATE_REDIS_URL: REDIS_URL }, drop: db.drop };
    },
  ],
];

describe.each(backends)('hit counts on kill -9 and on a clean stop (%s)', (_name, storage) => {
  it('kill -9 under a hit load loses at most the last flush interval of hit counts, and no charge; a clean stop loses nothing', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-hitkill-'));
    const store = await storage();
    const env = serveEnv(dataDir, { url: sim.url, key: SIM_KEY }, store.env);
    const serve = () => serveCli(env);
    try {
      const created = await runCli(['keys', 'create', '--name', 'hit-team', '--json'], env);
      expect(created.code, created.stderr).toBe(0);
      const secret = (JSON.parse(created.stdout) as { key: string }).key;

      const chargedBefore = sim.creditsCharged();
      // kill -9 mid-load: the miss that filled the cache is charged; hits answered after the last flush may be lost.
      const first = await serve();
      const load = hitLoad(first.url, secret);
      await sleep(LOAD_MS);
      const killedAt = Date.now();
      first.child.kill('SIGKILL');
      await exited(first.child);
      const answered = await load.stop();
      const afterKill = await counted(env);
      expect(sim.creditsCharged()).toBeGreaterThan(chargedBefore);
      expect(afterKill.credits).toBe(sim.creditsCharged() - chargedBefore);
      const lost = answered.length - afterKill.requests;
      const rate = answered.filter((t) => t > killedAt - 1_000).length;
      const lastWindow = answered.filter((t) => t > killedAt - FLUSH_MS - SLACK_MS).length;
      // Counted hits may exceed the answers seen only by requests answered as the process died.
      expect(lost).toBeGreaterThanOrEqual(-CLIENTS);
      expect(lost).toBeLessThanOrEqual(lastWindow);
      console.info(
        `[hit counts, kill -9] answered ${answered.length} in ${LOAD_MS / 1000} s, ${rate} a second over its last second; counted ${afterKill.requests}; ` +
          `lost ${lost} (${Math.round((lost / rate) * 1000)} ms of that rate); bound ${lastWindow}`,
      );

      // A clean stop: the load ends, then SIGTERM; every answer is counted.
      const second = await serve();
      const again = hitLoad(second.url, secret);
      await sleep(1_500);
      const answeredAgain = await again.stop();
      second.child.kill('SIGTERM');
      expect(await exited(second.child)).toBe(0);
      const afterStop = await counted(env);
      expect(afterStop.requests - afterKill.requests).toBe(answeredAgain.length);
      expect(afterStop.credits).toBe(afterKill.credits);
    } finally {
      await store.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
