import proxyaddr from '@fastify/proxy-addr';
import fc from 'fast-check';
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { withoutPort } from '../../src/domain/forwarded-address.js';
import { clientIp, trustedProxies } from '../../src/http/client-ip.js';

const PROXIES = trustedProxies(['10.0.0.0/8', '127.0.0.1', 'fd00::/8']);

describe('trusted proxies', () => {
  it('match addresses and ranges of both families, IPv4-mapped IPv6 included', () => {
    for (const a of ['10.1.2.3', '::ffff:10.1.2.3', '127.0.0.1', '::ffff:127.0.0.1', 'fd00::1', 'FD00::abcd']) expect(PROXIES.has(a), a).toBe(true);
    for (const a of ['11.0.0.1', '127.0.0.2', '::1', 'fe80::1', 'garbage', '', '10.1.2.3:80']) expect(PROXIES.has(a), a).toBe(false);
  });

  it('refuse an entry that is not an IP or CIDR, naming it', () => {
    for (const bad of ['10.0.0.0/33', 'fd00::/200', 'localhost', '10.0.0.0/-1', '10.0.0/8']) expect(() => trustedProxies([bad])).toThrow(`'${bad}'`);
  });
});

describe('clientIp: the right-most address not a trusted proxy', () => {
  it.each<[string, string | undefined, string]>([
    ['198.51.100.1', '1.2.3.4', '198.51.100.1'], // an unlisted peer: its X-Forwarded-For is not read at all
    ['127.0.0.1', undefined, '127.0.0.1'],
    ['127.0.0.1', '1.2.3.4', '1.2.3.4'],
    ['127.0.0.1', '6.6.6.6, 1.2.3.4, 10.0.0.9', '1.2.3.4'], // the client chose 6.6.6.6; a listed proxy saw 1.2.3.4
    ['10.0.0.1', '10.0.0.2, 10.0.0.3', '10.0.0.2'], // every hop listed: the left-most entry
    ['127.0.0.1', ' 1.2.3.4 ,\t10.0.0.5 ', '1.2.3.4'],
    ['127.0.0.1', '1.2.3.4,,  ,', '1.2.3.4'],
    ['127.0.0.1', '', '127.0.0.1'],
    ['::ffff:127.0.0.1', '2001:db8::1', '2001:db8::1'],
    ['127.0.0.1', 'garbage, 10.0.0.1', 'garbage'], // what a listed proxy wrote is believed, even nonsense
  ])('peer %s, X-Forwarded-For %j → %s', (peer, xff, expected) => {
    expect(clientIp(peer, xff, PROXIES)).toBe(expected);
  });

  it('with no trusted proxies it is always the peer', () => {
    expect(clientIp('127.0.0.1', '1.2.3.4', trustedProxies([]))).toBe('127.0.0.1');
  });

  // proxy-addr does not know ports in X-Forwarded-For (below): nothing of ours reads request.ip.
  it("names the same address as Fastify's proxy-addr (request.ip on the Fastify routes) for any header without ports", () => {
    const addr = fc.constantFrom('10.0.0.1', '10.9.9.9', '127.0.0.1', '1.2.3.4', '198.51.100.7', 'fd00::5', '2001:db8::1', '::ffff:10.0.0.7', 'garbage', '');
    const sep = fc.constantFrom(',', ', ', ' ,', ',\t', ',,', ' , ');
    const header = fc.oneof(
      fc.constant(undefined),
      fc.array(fc.tuple(addr, sep), { maxLength: 6 }).map((parts) => parts.map(([a, s]) => a + s).join('')),
      fc.tuple(fc.constantFrom('', ' ', '\t', '\u00a0'), addr, fc.constantFrom('', ' ', '\t', '\u00a0')).map(([a, b, c]) => a + b + c),
    );
    fc.assert(
      fc.property(addr, header, (peer, xff) => {
        const req = { headers: xff === undefined ? {} : { 'x-forwarded-for': xff }, socket: { remoteAddress: peer } } as unknown as IncomingMessage;
        const fastify = proxyaddr(req, (a: string) => PROXIES.has(a));
        expect(clientIp(peer, xff, PROXIES)).toBe(fastify);
      }),
      { seed: 11, numRuns: 2000 },
    );
  });
});

describe('an X-Forwarded-For entry with a port', () => {
  const port = fc.integer({ min: 0, max: 65_535 });

  it('is compared by its address: IPv4 a.b.c.d:port, bracketed [v6]:port; a bare IPv6 is never split at a colon', () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.ipV6(), port, (v4, v6, p) => {
        expect(withoutPort(`${v4}:${p}`)).toBe(v4);
        expect(withoutPort(`[${v6}]:${p}`)).toBe(v6);
        expect(withoutPort(`[${v6}]`)).toBe(v6);
        expect(withoutPort(v4)).toBe(v4);
        expect(withoutPort(v6)).toBe(v6);
      }),
      { seed: 7, numRuns: 2000 },
    );
    for (const e of ['unknown', '_hidden', '', '1.2.3.4:', '1.2.3.4:123456', '[fd00::1]:x']) expect(withoutPort(e), e).toBe(e);
  });

  it.each<[string, string]>([
    ['203.0.113.1, 10.9.9.9:443', '203.0.113.1'],
    ['203.0.113.1, [fd00::9]:8443', '203.0.113.1'],
    ['203.0.113.1:5000, 10.0.0.2:1, [fd00::1]', '203.0.113.1:5000'], // the client's own port stays for the limiter to drop
    ['2001:db8::5, [::ffff:10.0.0.7]:80', '2001:db8::5'],
    ['10.0.0.2:80, 10.0.0.3:81', '10.0.0.2:80'], // every hop listed: the left-most entry
  ])('a listed proxy written with a port is a listed proxy: %j → %s', (xff, expected) => {
    expect(clientIp('127.0.0.1', xff, PROXIES)).toBe(expected);
  });

  it('a bare IPv6 whose last group looks like a port is its own address, not the listed proxy', () => {
    const one = trustedProxies(['127.0.0.1', '2001:db8::1']);
    expect(clientIp('127.0.0.1', '203.0.113.1, 2001:db8::1:443', one)).toBe('2001:db8::1:443');
    expect(clientIp('127.0.0.1', '203.0.113.1, [2001:db8::1]:443', one)).toBe('203.0.113.1');
  });

  it('property: right of any client, listed proxies written with or without ports are all skipped', () => {
    const proxy = fc.tuple(fc.constantFrom('10.0.0.1', '10.200.3.4', '127.0.0.1', 'fd00::5', '::ffff:10.0.0.7'), fc.option(port, { nil: undefined }));
    const written = ([a, p]: [string, number | undefined]) => (p === undefined ? a : a.includes(':') ? `[${a}]:${p}` : `${a}:${p}`);
    const client = fc.constantFrom('203.0.113.1', '198.51.100.7', '2001:db8::1', '2001:db8::1:443');
    fc.assert(
      fc.property(fc.array(fc.string(), { maxLength: 2 }), client, fc.array(proxy, { minLength: 1, maxLength: 4 }), (spoofed, c, hops) => {
        const xff = [...spoofed, c, ...hops.map(written)].join(', ');
        expect(clientIp('127.0.0.1', xff, PROXIES)).toBe(c);
      }),
      { seed: 5, numRuns: 1000 },
    );
  });
});
