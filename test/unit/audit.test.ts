import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { auditQuery, isAuditInputError } from '../../src/admin/audit.js';
import { AUDIT_ACTIONS, decodeCursor, encodeCursor, keyChange, newAuditId, purgeTarget } from '../../src/domain/audit.js';
import type { ApiKey } from '../../src/domain/keys.js';

const KEY: ApiKey = {
  id: 'key_1',
  name: 'a',
  team: null,
  teamCredits: null,
  prefix: 'tg_12345678',
  createdAt: 0,
  updatedAt: 0,
  expiresAt: null,
  revokedAt: null,
  lastUsedAt: null,
  rate: null,
  credits: null,
  endpoints: null,
  strategies: null,
  cacheIsolated: false,
  previousExpiresAt: null,
};

describe('audit query parsing', () => {
  it('never throws: any input is a query within bounds or a refusal naming a parameter', () => {
    const value = fc.oneof(fc.string(), fc.constantFrom('2026-01-01', '2026-01-01T10:00:00Z', '0', '1000', '1001', 'key.create'), fc.array(fc.string()), fc.integer());
    const input = fc.dictionary(fc.oneof(fc.constantFrom('from', 'to', 'actor', 'action', 'target', 'limit', 'cursor'), fc.string()), value);
    fc.assert(
      fc.property(input, (i) => {
        const q = auditQuery(i);
        if (isAuditInputError(q)) return q.field.length > 0 && q.message.length > 0;
        return q.limit >= 1 && q.limit <= 1000 && (q.from === undefined || q.to === undefined || q.from < q.to) && (q.action === undefined || AUDIT_ACTIONS.includes(q.action));
      }),
    );
  });

  it('a date-only to includes that day; defaults are no bounds and 50 entries', () => {
    expect(auditQuery({})).toEqual({ limit: 50 });
    expect(auditQuery({ from: '2026-01-01', to: '2026-01-01', limit: '7' })).toEqual({ limit: 7, from: Date.UTC(2026, 0, 1), to: Date.UTC(2026, 0, 2) });
  });

  it('cursors round-trip; anything else is refused', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 47 }), (ts) => {
        const c = { ts, id: newAuditId(ts) };
        expect(decodeCursor(encodeCursor(c))).toEqual(c);
      }),
    );
    fc.assert(fc.property(fc.string(), (s) => decodeCursor(s) === null || /^\d+$/.test(String(decodeCursor(s)!.ts))));
    expect(decodeCursor('bm90LWEtY3Vyc29y')).toBeNull();
  });
});

describe('audit entries', () => {
  it('a change shows only the fields that moved; updated_at and last use are never among them', () => {
    const after = { ...KEY, rate: '5/second', updatedAt: 9, lastUsedAt: 9 };
    expect(keyChange('cli', 'key.update', KEY, after)).toEqual({ actor: 'cli', action: 'key.update', target: 'key_1', before: { rate: null }, after: { rate: '5/second' } });
    expect(keyChange('cli', 'key.update', KEY, { ...KEY, updatedAt: 5 })).toMatchObject({ before: {}, after: {} });
  });

  it('a purge target names its filter', () => {
    expect(purgeTarget({ all: true })).toBe('cache:all');
    expect(purgeTarget({ endpoint: 'profile' })).toBe('cache:endpoint=profile');
    expect(purgeTarget({ identity: 'company:org_id:42', endpoint: 'company_posts' })).toBe('cache:identity=company:org_id:42,endpoint=company_posts');
  });
});
