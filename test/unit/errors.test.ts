import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/domain/errors.js';

const README = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8');

describe('error registry', () => {
  it('every code is in the README error table with its status', () => {
    const rows = new Map<string, number>();
    for (const m of README.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \|/gm)) rows.set(m[1]!, Number(m[2]));
    for (const [code, def] of Object.entries(ERROR_CODES)) {
      expect(rows.get(code), `README row for ${code}`).toBe(def.status);
    }
    expect([...rows.keys()].sort()).toEqual(Object.keys(ERROR_CODES).sort());
  });

  it('codes are machine-readable and messages are safe sentences', () => {
    for (const [code, def] of Object.entries(ERROR_CODES)) {
      expect(code).toMatch(/^[A-Z][A-Z0-9_]+$/);
      expect(def.message).toMatch(/^[A-Z].*\.$/);
      expect(def.status).toBeGreaterThanOrEqual(400);
    }
  });
});
