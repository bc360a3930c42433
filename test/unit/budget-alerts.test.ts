import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  crossedThresholds,
  decodeAlertCursor,
  encodeAlertCursor,
  newEventId,
  retryAfterMs,
  retryDelayMs,
  scopeId,
  scopeKind,
  signatureHeader,
  verifySignature,
} from '../../src/domain/budget-alerts.js';
import { PROVIDER_SCOPE } from '../../src/domain/credits.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, validateConfig } from '../../src/config.js';
import { masked } from '../../src/cli/config.js';

describe('crossedThresholds', () => {
  it.each<[number, number, number[]]>([
    [0, 100, []],
    [49, 100, []],
    [50, 100, [50]],
    [79, 100, [50]],
    [80, 100, [50, 80]],
    [100, 100, [50, 80, 100]],
    [130, 100, [50, 80, 100]],
    [2, 3, [50]], // 66.7 %
    [5, 0, []], // a cache-only key (limit 0) warns of nothing
  ])('%i of %i crosses %j', (used, limit, expected) => {
    expect(crossedThresholds(used, limit, [50, 80, 100])).toEqual(expected);
  });

  it('is exact at the boundary, with no rounding of a percentage', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e9 }), fc.integer({ min: 1, max: 100 }), (limit, t) => {
        const at = Math.ceil((t * limit) / 100);
        expect(crossedThresholds(at, limit, [t])).toEqual([t]);
        expect(crossedThresholds(at - 1, limit, [t])).toEqual([]);
      }),
    );
  });
});

describe('scopes', () => {
  it('names a key, a team and the provider', () => {
    expect([scopeKind('key_01ABC'), scopeId('key_01ABC')]).toEqual(['key', 'key_01ABC']);
    expect([scopeKind('team:growth'), scopeId('team:growth')]).toEqual(['team', 'growth']);
    expect([scopeKind(PROVIDER_SCOPE), scopeId(PROVIDER_SCOPE)]).toEqual(['provider', 'provider']);
  });
});

describe('signatures', () => {
  const secret = 'whsec-unit-tests-0123456789';
  it('verify for the body, secret and time they were made with, and for nothing else', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 0, max: 2 ** 31 }), fc.string({ minLength: 1 }), (body, t, extra) => {
        const h = signatureHeader(secret, t, body);
        expect(verifySignature(secret, h, body, t)).toBe(true);
        expect(verifySignature(secret, h, body + extra, t)).toBe(false);
        expect(verifySignature(secret + extra, h, body, t)).toBe(false);
        expect(verifySignature(secret, h, body, t + 301)).toBe(false);
      }),
    );
  });

  it('never throws on a header of any shape', () => {
    fc.assert(fc.property(fc.string(), (h) => typeof verifySignature(secret, h, '{}', 0) === 'boolean'));
  });
});

describe('retries', () => {
  it('back off exponentially with jitter, capped, never before Retry-After (itself capped)', () => {
    expect(retryDelayMs(1, 1_000, 300_000, 0, null)).toBe(500);
    expect(retryDelayMs(1, 1_000, 300_000, 0.999_999, null)).toBe(1_000);
    expect(retryDelayMs(4, 1_000, 300_000, 1, null)).toBe(8_000);
    expect(retryDelayMs(30, 1_000, 300_000, 1, null)).toBe(300_000);
    expect(retryDelayMs(1, 1_000, 300_000, 0, 120_000)).toBe(120_000);
    expect(retryDelayMs(1, 1_000, 60_000, 0, 3_600_000)).toBe(60_000);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, r) => {
        const d = retryDelayMs(attempt, 100, 10_000, r, null);
        expect(d).toBeGreaterThanOrEqual(50);
        expect(d).toBeLessThanOrEqual(10_000);
      }),
    );
  });

  it('read Retry-After as seconds or an HTTP date; anything else is ignored', () => {
    const now = Date.UTC(2026, 0, 1);
    expect(retryAfterMs('3', now)).toBe(3_000);
    expect(retryAfterMs(new Date(now + 5_000).toUTCString(), now)).toBe(5_000);
    expect(retryAfterMs(undefined, now)).toBeNull();
    expect(retryAfterMs('soon', now)).toBeNull();
    fc.assert(fc.property(fc.string(), (v) => retryAfterMs(v, now) === null || retryAfterMs(v, now)! >= 0));
  });
});

describe('cursors', () => {
  it('round-trip, and anything else is refused', () => {
    const c = { ts: Date.UTC(2026, 0, 1), id: newEventId(Date.UTC(2026, 0, 1)) };
    expect(decodeAlertCursor(encodeAlertCursor(c))).toEqual(c);
    fc.assert(fc.property(fc.string(), (s) => decodeAlertCursor(s) === null || typeof decodeAlertCursor(s)!.ts === 'number'));
    expect(decodeAlertCursor('bm9wZQ')).toBeNull();
  });
});

describe('configuration', () => {
  const hook = { url: 'https://hooks.example.com/t', secret: 'a-secret-of-16-chars' };
  it.each<[string, unknown, RegExp]>([
    ['a threshold above 100', { thresholds: [50, 101] }, /thresholds/],
    ['a threshold of 0', { thresholds: [0, 50] }, /thresholds/],
    ['repeated thresholds', { thresholds: [50, 50] }, /must not repeat/],
    ['thresholds out of order', { thresholds: [80, 50] }, /ascending/],
    ['a short secret', { webhooks: [{ ...hook, secret: 'short' }] }, /at least 16/],
    ['a URL that is not http(s)', { webhooks: [{ ...hook, url: 'ftp://x.example/h' }] }, /url/],
    ['two webhooks of one name', { webhooks: [hook, { ...hook, url: 'https://hooks.example.com/other' }] }, /same name/],
  ])('refuses %s', (_what, notifications, message) => {
    expect(() => validateConfig({ notifications })).toThrow(message);
  });

  it('defaults to 50, 80 and 100 %, no webhooks; config check masks only the secrets (and URL passwords)', () => {
    expect(validateConfig({}).notifications).toMatchObject({ thresholds: [50, 80, 100], webhooks: [] });
    expect(masked('secret', [{ name: 'ops', ...hook }])).toEqual([{ name: 'ops', url: hook.url, secret: '********' }]);
  });

  it('reads the webhooks from TOLLGATE_NOTIFICATIONS_WEBHOOKS (a JSON array) or from the file _FILE names', () => {
    const list = [{ name: 'ops', ...hook }];
    expect(loadConfig({ env: { TOLLGATE_NOTIFICATIONS_WEBHOOKS: JSON.stringify(list) } }).notifications.webhooks).toEqual(list);
    const dir = mkdtempSync(join(tmpdir(), 'tg-hooks-'));
    try {
      writeFileSync(join(dir, 'webhooks.json'), JSON.stringify(list) + '\n');
      expect(loadConfig({ env: { TOLLGATE_NOTIFICATIONS_WEBHOOKS_FILE: join(dir, 'webhooks.json'), TOLLGATE_NOTIFICATIONS_THRESHOLDS: '25,90' } }).notifications).toMatchObject({
        webhooks: list,
        thresholds: [25, 90],
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
