import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisPrefixOf } from '../../src/store/redis/client.js';
import { profile, startCluster, until, type Cluster } from '../helpers/replica-processes.js';
import { redisClient } from '../helpers/redis.js';

/*
 * A paid miss through a shared replica writes its ledger row beside its cache entry, and lets
 * its cross-replica claim go beside them (bench/trace-miss.ts shows why: each was a round trip
 * after the other). What must still hold when the answer arrives: the row with its charge is
 * written (and the reservation ended), the entry `Cache-Status` says is stored is there, and
 * the claim is let go soon after — never left held.
 */
async function rows<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[]): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

describe('a paid miss on a shared replica', () => {
  let c: Cluster;
  beforeAll(async () => {
    c = await startCluster({ replicas: 1 });
  }, 30_000);
  afterAll(() => c?.close(), 30_000);

  it('answers with its ledger row and charge written, its entry stored, and its claim let go', async () => {
    const { secret } = await c.newKey();
    const redis = await redisClient();
    try {
      for (let i = 0; i < 5; i++) {
        const r = await c.get(0, profile(`miss-writes-${i}`), secret);
        expect(r.status).toBe(200);
        const requestId = String(r.headers['x-request-id']);
        // Read the moment the answer arrived: nothing of the miss is left to be written but the claim's release.
        const [ledger, reserved, stored] = await Promise.all([
          rows<{ credits: number; status: number; unsettled: boolean }>(c.databaseUrl, 'SELECT credits::int AS credits, status, unsettled FROM ledger WHERE request_id = $1', [requestId]),
          rows(c.databaseUrl, 'SELECT 1 FROM reservations WHERE request_id = $1', [requestId]),
          rows(c.databaseUrl, "SELECT 1 FROM cache_entries WHERE data LIKE '%' || $1 || '%'", [`miss-writes-${i}`]),
        ]);
        expect(ledger).toEqual([{ credits: r.json.meta.credits_used, status: 200, unsettled: false }]);
        expect(r.json.meta.credits_used).toBeGreaterThan(0);
        expect(reserved).toEqual([]);
        expect(String(r.headers['cache-status'])).toContain('stored');
        expect(stored).toHaveLength(1);
        // Let go: no claim held, only the marker a release leaves for the next claimer (call-claims.ts).
        const claimKeys = async () => (await redis.keys(`${redisPrefixOf(c.databaseUrl)}claim:*`)).filter((k) => !k.endsWith(':released'));
        await until('the claim let go', 1_000, async () => ((await claimKeys()).length === 0 ? true : undefined), 10);
      }
      expect((await c.get(0, profile('miss-writes-0'), secret)).headers['x-cache-status']).toBe('HIT');
    } finally {
      redis.destroy();
    }
  }, 30_000);
});
