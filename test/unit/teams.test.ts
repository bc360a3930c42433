import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTeamCredits, parseTeamName } from '../../src/admin/teams.js';
import { KeyInputError } from '../../src/admin/keys.js';
import { isTeamScope, newTeamName, teamName, teamScope } from '../../src/domain/teams.js';

describe('team names', () => {
  it('any text of 1 to 100 characters without control characters is a name, trimmed and NFC; doing it again changes nothing', () => {
    const char = fc
      .string({ unit: 'grapheme', minLength: 1, maxLength: 100 })
      .filter((s) => !/[\u0000-\u001f\u007f]/.test(s) && s.trim().length > 0 && s.trim().normalize('NFC').length <= 100);
    fc.assert(
      fc.property(char, (s) => {
        const name = teamName(s);
        expect(name).toBe(s.trim().normalize('NFC'));
        expect(teamName(name)).toBe(name);
        expect(isTeamScope(teamScope(name))).toBe(true);
      }),
    );
  });

  it('a decomposed name is the composed one: "Cafe" + combining acute is "Café"', () => {
    expect(teamName(' Cafe\u0301 ')).toBe('Caf\u00e9');
    expect(teamScope(teamName('Cafe\u0301'))).toBe(teamScope('Caf\u00e9'));
  });

  it('a team is not made under "." or "..", which a URL path resolves away; such a name is still looked up', () => {
    for (const dots of ['.', '..', ' .. ']) {
      expect(() => newTeamName(dots)).toThrow(/cannot be "\." or "\.\."/);
      expect(teamName(dots)).toBe(dots.trim());
    }
    expect(newTeamName('...')).toBe('...');
    expect(newTeamName('.growth')).toBe('.growth');
  });

  it('refuses blank names, names over 100 characters and control characters, naming the field', () => {
    const bad = fc.oneof(
      fc.constantFrom('', ' ', '\t\n', 'a'.repeat(101)),
      fc.tuple(fc.string(), fc.integer({ min: 0, max: 0x1f }), fc.string()).map(([a, c, b]) => `x${a}${String.fromCharCode(c)}${b}x`),
    );
    fc.assert(
      fc.property(bad, (s) => {
        expect(() => parseTeamName(s)).toThrow(KeyInputError);
      }),
    );
    expect(() => parseTeamName(7)).toThrow(/must be a string/);
  });

  it('budgets: normalised like a key budget; null, absent or none clear it; anything else refused on credits', () => {
    expect(parseTeamCredits(' 5000/months, 300/day ')).toBe('300/day,5000/month');
    expect(parseTeamCredits(undefined)).toBeNull();
    expect(parseTeamCredits(null)).toBeNull();
    expect(parseTeamCredits('None')).toBeNull();
    for (const v of ['5000', '10/fortnight', '1/day,2/day', 5, {}]) {
      try {
        parseTeamCredits(v);
        expect.unreachable(`${JSON.stringify(v)} accepted`);
      } catch (err) {
        expect(err).toBeInstanceOf(KeyInputError);
        expect((err as KeyInputError).field).toBe('credits');
      }
    }
  });
});
