/**
 * The dashboard on two `serve` processes sharing PostgreSQL and Redis: a session made on one
 * replica works on the other, a change made through either is seen on both, and a sign-out on
 * one ends the session on both (sessions live in the shared storage, not in a replica's memory).
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startCluster, type Cluster } from '../helpers/replica-processes.js';

let c: Cluster;
beforeAll(async () => {
  c = await startCluster({ replicas: 2 });
}, 30_000);
afterAll(() => c?.close(), 30_000);

async function send(i: number, method: 'GET' | 'POST', path: string, cookie: string | null, fields?: Record<string, string>) {
  const base = c.replicas[i]!.url;
  const headers: Record<string, string> = { ...(cookie ? { cookie } : {}) };
  if (fields) Object.assign(headers, { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(base).origin, 'sec-fetch-site': 'same-origin' });
  const res = await request(base + path, { method, headers, body: fields ? new URLSearchParams(fields).toString() : undefined });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

describe('the dashboard across replicas', () => {
  it('signs in on one replica, works and changes things on the other, and signs out for both', async () => {
    const signIn = await send(0, 'POST', '/dashboard/sign-in', null, { token: ADMIN_TOKEN });
    expect(signIn.status).toBe(303);
    const cookie = String(signIn.headers['set-cookie']).split(';')[0]!;

    const keys = await send(1, 'GET', '/dashboard/keys', cookie);
    expect(keys.status).toBe(200);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(keys.text)![1]!;
    const made = await send(1, 'POST', '/dashboard/keys', cookie, { name: 'made-on-replica-1', _csrf: csrf, endpoints: 'profile', strategies: 'cached' });
    expect(made.status).toBe(201);
    expect((await send(0, 'GET', '/dashboard/keys', cookie)).text).toContain('made-on-replica-1');
    // The overview's alerts panel and the Alerts page read the shared backend's alerts too.
    for (const path of ['/dashboard', '/dashboard/alerts']) {
      const r = await send(0, 'GET', path, cookie);
      expect([r.status, r.text.includes('No budget alerts yet')], path).toEqual([200, true]);
    }

    const out = await send(1, 'POST', '/dashboard/sign-out', cookie, { _csrf: csrf });
    expect(out.status).toBe(303);
    for (const i of [0, 1]) {
      const r = await send(i, 'GET', '/dashboard/keys', cookie);
      expect([r.status, r.headers.location], `replica ${i}`).toEqual([303, '/dashboard/sign-in']);
    }
  });
});
