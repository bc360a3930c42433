import fc from 'fast-check';
import FindMyWay from 'find-my-way';
import { describe, expect, it } from 'vitest';
import { isV1Path, validPercentEncoding } from '../../src/http/edge.js';

describe('isV1Path: the data plane takes /v1 and everything under it', () => {
  it.each([
    ['/v1', true],
    ['/v1/', true],
    ['/v1?x=1', true],
    ['/v1/profile?person.id=1', true],
    ['/v1//x', true],
    ['/v1x', false],
    ['/v10/profile', false],
    ['/V1/profile', false],
    ['/v2/profile', false],
    ['/admin/keys', false],
    ['http://x/v1/profile', false],
    ['*', false],
  ])('%s → %s', (url, v1) => expect(isV1Path(url)).toBe(v1));
});

describe('validPercentEncoding', () => {
  const bad = Symbol('bad');
  const router = FindMyWay({ onBadUrl: () => bad, defaultRoute: () => 'ok' });
  router.on('GET', '/*', () => 'ok');
  /** What Fastify's router (which answers the control plane's bad paths) makes of the path. */
  const routerSaysBad = (path: string) => (router.find('GET', path) as { handler: () => unknown } | null)?.handler() === bad;

  it.each(['/v1/%zz', '/v1/profile%', '/v1/%ff', '/v1/%e9', '/v1/%c3%28', '/v1/%2', '/v1/%%'])('refuses %s, as the router does', (path) => {
    expect(validPercentEncoding(path)).toBe(false);
    expect(routerSaysBad(path)).toBe(true);
  });

  it('agrees with the router on any path', () => {
    const part = fc.oneof(
      fc.constantFrom('%', '%2', '%25', '%2F', '%2f', '%zz', '%ff', '%c3%a9', '%c3', '%e2%80%a5', '%3F', '%23', '%00', 'a', '/', '.', '~', 'é'),
      fc.stringMatching(/^[a-z0-9]{0,4}$/),
    );
    fc.assert(
      fc.property(fc.array(part, { maxLength: 8 }), (parts) => {
        const path = '/v1/' + parts.join('');
        expect(validPercentEncoding(path)).toBe(!routerSaysBad(path));
      }),
      { numRuns: 2000 },
    );
  });
});
