import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { startStack, type Reply, type Stack } from '../helpers/stack.js';

/**
 * The failed-authentication limiters count an IPv6 client by its /64: a host given a /64
 * chooses its source address from it freely, so per-address counters would give it a fresh
 * budget of guesses — of client keys, and of the operator-chosen admin token — per address.
 */
const TOKEN = 'admin_token_for_the_ipv6_limit_test';
const clock = new FakeClock(Date.UTC(2026, 0, 5, 10, 0, 0));
let s: Stack;
beforeAll(async () => {
  s = await startStack({ clock, config: { adminToken: TOKEN, server: { trustedProxies: ['127.0.0.1'] }, limits: { failedAuth: '3/minute' } } });
});
afterAll(async () => s.close());

const nextMinute = () => clock.set(Math.floor(clock.now() / 60_000) * 60_000 + 60_000);
const code = (r: Reply) => (r.status === 401 ? 401 : r.json?.error?.code ?? r.status);
/** Addresses of one /64, spelt as a client's proxy might write them. */
const sameNet = (i: number) => (i % 2 ? `2001:db8:7:9::${(i * 7919).toString(16)}` : `2001:0DB8:0007:0009:${i.toString(16)}:aaaa:bbbb:cccc`);

describe('failed authentication from IPv6 addresses, and from addresses with a port', () => {
  it('client keys: addresses of one /64 share the limit; another /64 does not', async () => {
    nextMinute();
    const codes = [];
    for (let i = 0; i < 8; i++) {
      codes.push(code(await s.get('/v1/company?org_id=1', { key: 'tg_' + String(i).padStart(40, 'G'), headers: { 'x-forwarded-for': sameNet(i) } })));
    }
    expect(codes).toEqual([401, 401, 401, 'AUTH_RATE_LIMITED', 'AUTH_RATE_LIMITED', 'AUTH_RATE_LIMITED', 'AUTH_RATE_LIMITED', 'AUTH_RATE_LIMITED']);
    const neighbour = await s.get('/v1/company?org_id=1', { key: null, headers: { 'x-forwarded-for': '2001:db8:7:a::1' } });
    expect(neighbour.status).toBe(401);
    expect(neighbour.headers['x-ratelimit-remaining']).toBe('2');
  });

  it('a proxy that writes the port too (ip:port, [ip]:port): connections from new ports share the limit', async () => {
    nextMinute();
    const codes = [];
    for (let i = 0; i < 8; i++) {
      const xff = i % 2 ? `203.0.113.9:${40_000 + i}` : `[2001:db8:5::${i}]:${40_000 + i}`;
      codes.push(code(await s.get('/v1/company?org_id=1', { key: null, headers: { 'x-forwarded-for': `${xff}, 127.0.0.1` } })));
    }
    const v4 = codes.filter((_, i) => i % 2 === 1);
    const v6 = codes.filter((_, i) => i % 2 === 0);
    for (const seen of [v4, v6]) expect(seen).toEqual([401, 401, 401, 'AUTH_RATE_LIMITED']);
  });

  it('the admin token: guesses from one /64 are capped however many addresses they come from', async () => {
    nextMinute();
    const codes = [];
    for (let i = 0; i < 8; i++) {
      const res = await fetch(`${s.url}/admin/keys`, { headers: { authorization: `Bearer wrong_token_guess_${i}_xxxxxxxx`, 'x-forwarded-for': sameNet(i) } });
      codes.push(res.status === 401 ? 401 : ((await res.json()) as { error: { code: string } }).error.code);
    }
    expect(codes).toEqual([401, 401, 401, 'AUTH_RATE_LIMITED', 'AUTH_RATE_LIMITED', 'AUTH_RATE_LIMITED', 'AUTH_RATE_LIMITED', 'AUTH_RATE_LIMITED']);
    const other = await fetch(`${s.url}/admin/keys`, { headers: { authorization: `Bearer ${TOKEN}`, 'x-forwarded-for': '2001:db8:8::1' } });
    expect(other.status).toBe(200);
  });
});
