import { describe, expect, it } from 'vitest';
import { durationMs, KeyInputError, parseKeyInput } from '../../src/admin/keys.js';
import { passthroughAllowed } from '../../src/gateway/passthrough.js';

describe('key input (shared by the CLI and the admin API)', () => {
  it('canonicalizes policies and budgets and keeps absent fields absent', () => {
    expect(parseKeyInput({ rate: ' 20000/days, 600/minute ', credits: '1000/months' })).toEqual({ rate: '600/minute,20000/day', credits: '1000/month' });
    expect(parseKeyInput({})).toEqual({});
  });

  it('clears with null or the words none, all and never', () => {
    expect(parseKeyInput({ rate: 'none', credits: null, endpoints: 'all', strategies: null, expires_at: 'never', team: null })).toEqual({
      rate: null,
      credits: null,
      endpoints: null,
      strategies: null,
      expiresAt: null,
      team: null,
    });
  });

  it('accepts scope lists as arrays or comma strings, deduplicated, passthrough included', () => {
    expect(parseKeyInput({ endpoints: 'profile, company,profile', strategies: ['cached'] })).toEqual({ endpoints: ['profile', 'company'], strategies: ['cached'] });
    expect(parseKeyInput({ endpoints: ['passthrough'] }).endpoints).toEqual(['passthrough']);
  });

  it.each<[object, string]>([
    [{ name: '' }, 'name'],
    [{ name: 5 }, 'name'],
    [{ rate: '5/fortnight' }, 'rate'],
    [{ rate: 600 }, 'rate'],
    [{ credits: '5/year' }, 'credits'],
    [{ endpoints: [] }, 'endpoints'],
    [{ endpoints: ['people'] }, 'endpoints'],
    [{ strategies: 'cache' }, 'strategies'],
    [{ expires_at: '31/01/2027' }, 'expires_at'],
    [{ cache_isolated: 1 }, 'cache_isolated'],
  ])('%j is refused naming %s', (input, field) => {
    try {
      parseKeyInput(input);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(KeyInputError);
      expect((err as KeyInputError).field).toBe(field);
    }
  });

  it.each<[unknown, number]>([
    ['0', 0],
    [0, 0],
    ['90s', 90_000],
    ['15m', 900_000],
    ['24h', 86_400_000],
    ['7d', 604_800_000],
    ['3600', 3_600_000],
  ])('duration %j = %d ms', (v, ms) => {
    expect(durationMs('overlap', v)).toBe(ms);
  });

  it.each(['1w', '-1h', '1.5h', 'soon', ''])('duration %j is refused', (v) => {
    expect(() => durationMs('overlap', v)).toThrow(KeyInputError);
  });
});

describe('pass-through paths', () => {
  it.each<[string, boolean]>([
    ['/v1/credits', true],
    ['/v1/credits/x', false],
    ['/v1/extra/a/b', true],
    ['/v1/extra/', true],
    ['/v1/extra/../admin', false],
    ['/v1/extra/%2e%2e/admin', false],
    ['/v1/extra/a%2Fb', false],
    ['/v1/extra//a', false],
    ['/v1/other', false],
  ])('%s → %s', (path, ok) => {
    expect(passthroughAllowed(path, ['/v1/credits', '/v1/extra/*'])).toBe(ok);
  });
});
