import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holdWriteLock } from '../helpers/lock.js';
import { startStack, type Stack } from '../helpers/stack.js';

/**
 * A besteffort request may join a strict call fresh enough for it; but when the provider's
 * fetch fails (512), a strict call fails while a besteffort one is answered from the
 * provider's own older copy (provider spec: "fall back to the stale cache if the fetch
 * fails"). The joined besteffort request was answered the strict call's 512.
 */
let s: Stack;
beforeAll(async () => {
  // The webhook delivery's poll, meeting the held lock, would shut tollgate.db's write gate.
  s = await startStack({ config: { keys: { defaults: { rate: null, credits: null } }, notifications: { delivery: { pollIntervalMs: 3_600_000 } } } });
});
afterAll(async () => s.close());

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a besteffort request joined to a strict call the provider fails', () => {
  it("still gets the provider's fallback", async () => {
    const own = s.newKey({ name: 'own', cacheIsolated: true });
    const a = s.newKey({ name: 'a' });
    const b = s.newKey({ name: 'b' });
    // The provider holds org 42 (fetched through a key whose entries are its own: Tollgate's shared cache has none).
    expect((await s.get('/v1/company?org_id=42&strategy=fetch', { key: own.secret })).status).toBe(200);
    for (const k of [a, b]) expect((await s.get('/v1/company?org_id=900', { key: k.secret })).status).toBe(200);
    await pause(1_100); // the provider's copy is now older than strict's maxage
    s.sim.inject({ fault: { kind: 'status', status: 512 }, match: 'org_id=42' });
    // The strict lookup waits to write its reservation; the besteffort one joins its call meanwhile.
    const lock = await holdWriteLock(join(s.dataDir, 'tollgate.db'));
    const strict = s.get('/v1/company?org_id=42&strategy=strict&maxage=1', { key: a.secret });
    await pause(100);
    const besteffort = s.get('/v1/company?org_id=42&strategy=besteffort&maxage=3600', { key: b.secret });
    await pause(100);
    await lock.release();
    const [st, be] = await Promise.all([strict, besteffort]);
    expect(st.status).toBe(512);
    expect(be.status, JSON.stringify([be.json, be.headers])).toBe(200); // was 512, collapsed onto the strict call
    expect(be.json.data.id ?? be.json.data).toBeTruthy();
  });
});
