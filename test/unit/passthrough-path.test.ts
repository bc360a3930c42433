import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { passthroughAllowed } from '../../src/domain/passthrough-path.js';

const PATTERNS = ['/v1/credits', '/v1/extra/*'];
const PREFIX = '/v1/extra/';

describe('passthroughAllowed refuses every spelling of a path escape', () => {
  it.each([
    '/v1/extra/..;/admin', // Tomcat/Spring drop ;params: `..;` is `..`
    '/v1/extra/a;x=1',
    '/v1/extra/%252e%252e/admin', // decoded twice
    '/v1/extra/%252E%252E%252Fadmin',
    '/v1/extra/%2e%2e/admin',
    '/v1/extra/%2E/admin',
    '/v1/extra/.%2e/admin',
    '/v1/extra/%2e./admin',
    '/v1/extra/..%2fadmin',
    '/v1/extra/..%5cadmin',
    '/v1/extra/..\\admin',
    '/v1/extra\\..\\admin',
    '/v1/extra/%25%32%65%25%32%65/admin',
    '/v1/extra/%C0%AE%C0%AE/admin', // overlong UTF-8 dots
    '/v1/extra/%E2%80%A5/admin', // TWO DOT LEADER: `..` under NFKC
    '/v1/extra/%EF%BC%8E%EF%BC%8E/admin', // fullwidth full stops
    '/v1/extra/%EF%BC%8F..%EF%BC%8Fadmin', // fullwidth solidus
    '/v1/extra/./x',
    '/v1/extra/../admin',
    '/v1/extra/..',
    '/v1/extra/a//b',
    '/v1/extra/%00',
    '/v1/extra/%',
    '/v1/extra/%zz',
    '/v1/extra/%41', // an ASCII letter has no reason to be encoded
    '/v1/extra/a b',
    '/v1/extra/a#b',
    '/v1/credits/..',
    'v1/extra/a',
  ])('%s', (path) => {
    expect(passthroughAllowed(path, PATTERNS)).toBe(false);
  });

  it.each(['/v1/credits', '/v1/extra/', '/v1/extra/a/b', '/v1/extra/a.b/c..d/...', '/v1/extra/caf%C3%A9', "/v1/extra/a-b_c~d!$&'()*+,=:@"])('allows %s', (path) => {
    expect(passthroughAllowed(path, PATTERNS)).toBe(true);
  });
});

/** Every way a server between us and the provider might read a path. */
function readings(path: string): string[] {
  const out: string[] = [];
  let current = path;
  for (let i = 0; i < 4; i++) {
    for (const decoded of [decodeUtf8(current), decodeLatin1(current)]) {
      for (const n of [decoded, decoded.normalize('NFKC')]) {
        const slashed = n.replace(/\\/g, '/');
        out.push(slashed, slashed.split('/').map((s) => s.split(';')[0]).join('/'));
      }
    }
    current = decodeLatin1(current);
  }
  return out;
}

function decodeUtf8(s: string): string {
  return s.replace(/(?:%[0-9a-f]{2})+/gi, (m) => {
    try {
      return decodeURIComponent(m);
    } catch {
      return decodeLatin1(m);
    }
  });
}

function decodeLatin1(s: string): string {
  return s.replace(/%([0-9a-f]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/** RFC 3986 §5.2.4 remove_dot_segments. */
function removeDotSegments(path: string): string {
  const out: string[] = [];
  for (const seg of path.split('/').slice(1)) {
    if (seg === '..') out.pop();
    else if (seg !== '.') out.push(seg);
  }
  const last = path.split('/').at(-1);
  return '/' + out.join('/') + (last === '.' || last === '..' ? '/' : '');
}

describe('property: no allowed path escapes the allowed prefix under any reading', () => {
  const token = fc.constantFrom(
    '/', '.', '..', '%2e', '%2E', '%252e', '%25', '2e', '%2f', '%2F', '%5c', '\\', ';', '..;', 'a', 'b', '%c0%ae', '%e2%80%a5',
    '%ef%bc%8e', '%ef%bc%8f', '%c3%a9', '%', '%32', '%65', 'x=1', '~', '-',
  );
  it('over paths built from tricky pieces', () => {
    fc.assert(
      fc.property(fc.array(token, { maxLength: 12 }), (parts) => {
        const path = PREFIX + parts.join('');
        if (!passthroughAllowed(path, PATTERNS)) return true;
        return readings(path).every((r) => removeDotSegments(r).startsWith(PREFIX));
      }),
      { numRuns: 20_000 },
    );
  });

  it('over arbitrary strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 30 }), (tail) => {
        const path = PREFIX + tail;
        if (!passthroughAllowed(path, PATTERNS)) return true;
        return readings(path).every((r) => removeDotSegments(r).startsWith(PREFIX));
      }),
      { numRuns: 5_000 },
    );
  });
});

describe('the lookup endpoints are never pass-through, however spelled', () => {
  it.each(['/v1/profile/', '/v1/profile//', '/V1/Profile', '/v1/COMPANY/', '/v1/company/posts/', '/v1/Profile/Posts'])('%s is refused under /v1/*', (path) => {
    expect(passthroughAllowed(path, ['/v1/*'])).toBe(false);
  });

  it('other paths under /v1/* still pass', () => {
    expect(passthroughAllowed('/v1/credits', ['/v1/*'])).toBe(true);
    expect(passthroughAllowed('/v1/profile/other', ['/v1/*'])).toBe(true);
  });
});
