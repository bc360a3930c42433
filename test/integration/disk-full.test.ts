import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { fillDisk } from '../helpers/fill-disk.js';
import { profileUrl, startStack, type Stack } from '../helpers/stack.js';

/**
 * A full filesystem under the data directory (issue #11 §1): a real tmpfs of a few MB, filled
 * up while the gateway serves. The gateway must stop paying the provider for calls it cannot
 * record (503 before the call), keep answering hits, say why in /readyz, lose no charge, and
 * resume by itself once space is back. Needs root for `mount` (as CI and the dev machines run).
 */
const ALL = Number.MAX_SAFE_INTEGER;
const clock = new FakeClock(Date.UTC(2026, 3, 2, 8, 0, 0));
let mountPoint: string;
let filler: string;
let s: Stack;

beforeAll(async () => {
  mountPoint = mkdtempSync(join(tmpdir(), 'tollgate-full-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m,mode=0700', 'tmpfs', mountPoint]);
  mkdirSync(join(mountPoint, 'data'));
  filler = join(mountPoint, 'filler');
  s = await startStack({ clock, dataDir: join(mountPoint, 'data') });
});

afterAll(async () => {
  await s?.close();
  execFileSync('umount', ['-l', mountPoint]);
  rmSync(mountPoint, { recursive: true, force: true });
});

const ledgerCredits = () => s.app.costs.ledger.usage(0, ALL, 'key').reduce((a, r) => a + r.credits, 0);

describe('the data directory’s filesystem fills up', () => {
  it('refuses misses before any provider call, serves hits, loses no charge, and resumes by itself', async () => {
    const cached = `/v1/company?url=${encodeURIComponent('https://www.linkedin.com/company/warm-co')}`;
    expect((await s.get(cached)).status).toBe(200);

    fillDisk(filler);
    // A few writes may still fit in space SQLite already holds; within a bounded number of
    // misses the ledger can no longer be written, and from then on the provider is not called.
    const statuses: number[] = [];
    for (let i = 0; i < 200 && !statuses.includes(503); i++) {
      const r = await s.get(`/v1/profile?${profileUrl(`full-${i}`)}&strategy=fetch`);
      statuses.push(r.status);
      if (r.status === 503) {
        expect(r.json.error.code).toBe('STORAGE_UNAVAILABLE');
        expect(r.headers['x-request-id']).toBe(r.json.error.request_id);
      }
    }
    expect(statuses.at(-1)).toBe(503);
    expect(statuses.every((st) => st === 200 || st === 503)).toBe(true);

    const calls = s.sim.callCount();
    const refused = await s.get(`/v1/profile?${profileUrl('full-after')}&strategy=fetch`);
    expect(refused.status).toBe(503);
    expect(s.sim.callCount()).toBe(calls);

    const hit = await s.get(cached);
    expect(hit.status).toBe(200);
    expect(hit.headers['x-cache-status']).toBe('HIT');

    const ready = await s.get('/readyz', { key: null });
    expect(ready.status).toBe(503);
    expect(ready.json.checks.charges).toMatch(/^failing: SQLITE_FULL since /);

    // Space comes back: no restart, no operator action.
    unlinkSync(filler);
    clock.advance(10_000);
    const resumed = await s.get(`/v1/profile?${profileUrl('full-after')}&strategy=fetch`);
    expect(resumed.status).toBe(200);
    s.app.costs.ledger.flush();
    expect(s.app.costs.ledger.backlog().retrying).toBe(0);
    expect(ledgerCredits()).toBe(s.sim.creditsCharged());
    const readyAgain = await s.get('/readyz', { key: null });
    expect(readyAgain.status).toBe(200);
    expect(readyAgain.json.checks.charges).toBe('ok');
  }, 60_000);
});
