import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { promtool } from '../helpers/promtool.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

/*
 * Budget notifications on the embedded backend, over real HTTP: spend through /v1 misses (the
 * simulator as the provider, 3 credits a company lookup) against a key budget, a team budget and
 * the provider budget, with a webhook receiver on loopback. A fake clock moves the periods; the
 * evaluator is run by hand (app.notifier.evaluateNow) where the test needs to know it has run.
 */
const TOKEN = 'admin-token-for-notification-tests-01';
const SECRET = 'whsec-notification-tests-0123456789';

/** README "Budget notifications", the receiver's check, as documented (with the clock passed in). */
function verifyTollgate(secret: string, signatureHeader: string, rawBody: string, nowSeconds = Date.now() / 1000, toleranceSeconds = 300): boolean {
  const fields = Object.fromEntries(signatureHeader.split(',').map((kv) => kv.trim().split('=', 2) as [string, string]));
  const t = Number(fields.t);
  if (!Number.isInteger(t) || Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${rawBody}`).digest('hex');
  const given = String(fields.v1 ?? '');
  return given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected));
}

interface Event {
  id: string;
  type: string;
  scope: { kind: string; id: string; name: string };
  threshold_percent: number;
  used: number;
  limit: number;
  period: string;
  period_start: string;
  period_end: string;
  crossed_at: string;
}

const events = (r: Receiver): Event[] => r.received.map((x) => JSON.parse(x.body) as Event);
const fired = (r: Receiver, kind: string) => events(r).filter((e) => e.scope.kind === kind).map((e) => e.threshold_percent);

let org = 0;
/** One miss (a company never asked before): 3 credits, unless a budget refuses it. */
async function spend(s: Stack, key: string): Promise<number> {
  return (await s.get(`/v1/company?org_id=${++org}`, { key })).status;
}

async function until(ok: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('thresholds of key, team and provider budgets, once per period', () => {
  const clock = new FakeClock(Date.UTC(2026, 2, 10, 9, 0, 0));
  let s: Stack;
  let receiver: Receiver;
  let a: { id: string; secret: string };
  let b: { id: string; secret: string };
  let c: { id: string; secret: string };
  const settle = () => s.app.notifier.evaluateNow();
  const delivered = async (n: number) => until(() => receiver.received.length >= n);

  beforeAll(async () => {
    receiver = await startReceiver();
    s = await startStack({
      clock,
      config: {
        adminToken: TOKEN,
        upstream: { budget: { day: 60 } },
        notifications: { evaluateIntervalMs: 3_600_000, webhooks: [{ name: 'ops', url: receiver.url, secret: SECRET }], delivery: { pollIntervalMs: 50 } },
      },
    });
    a = s.newKey({ name: 'alpha', credits: '15/day' });
    await s.app.backend.teams.set('growth', '15/day');
    b = s.newKey({ name: 'beta', team: 'growth' });
    c = s.newKey({ name: 'gamma' });
  });
  afterAll(async () => {
    await s.close();
    await receiver.close();
  });

  it('a key budget: 50 %, 80 % and 100 % each fire once, as they are reached; later passes fire nothing again', async () => {
    for (const [calls, expected] of [
      [2, []], // 6 of 15
      [1, [50]], // 9: 60 %
      [1, [50, 80]], // 12
      [1, [50, 80, 100]], // 15
    ] as const) {
      for (let i = 0; i < calls; i++) expect(await spend(s, a.secret)).toBe(200);
      await settle();
      await delivered(expected.length);
      expect(fired(receiver, 'key')).toEqual(expected);
    }
    expect(await spend(s, a.secret)).toBe(429);
    await settle();
    await settle();
    await new Promise((r) => setTimeout(r, 200));
    expect(fired(receiver, 'key')).toEqual([50, 80, 100]);
    const last = events(receiver).find((e) => e.threshold_percent === 100)!;
    expect(last).toEqual({
      id: expect.stringMatching(/^evt_[0-9A-Z]{26}$/),
      type: 'budget.threshold',
      scope: { kind: 'key', id: a.id, name: 'alpha' },
      threshold_percent: 100,
      used: 15,
      limit: 15,
      period: 'day',
      period_start: '2026-03-10T00:00:00.000Z',
      period_end: '2026-03-11T00:00:00.000Z',
      crossed_at: new Date(clock.now()).toISOString(),
    });
  });

  it('every delivery is signed: the documented check verifies it, and refuses a tampered body, another secret or an old timestamp', () => {
    for (const r of receiver.received) {
      const sig = String(r.headers['x-tollgate-signature']);
      expect(sig).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(r.headers['x-tollgate-event-id']).toBe((JSON.parse(r.body) as Event).id);
      expect(r.headers['content-type']).toBe('application/json');
      const now = clock.now() / 1000;
      expect(verifyTollgate(SECRET, sig, r.body, now)).toBe(true);
      expect(verifyTollgate(SECRET, sig, r.body.replace('"used":', '"used":1'), now)).toBe(false);
      expect(verifyTollgate('another-secret-0123456789', sig, r.body, now)).toBe(false);
      expect(verifyTollgate(SECRET, sig, r.body, now + 3_600)).toBe(false);
    }
  });

  it("a team budget fires as its keys spend; the provider budget as every key's spending reaches it", async () => {
    for (let i = 0; i < 5; i++) expect(await spend(s, b.secret)).toBe(200);
    expect(await spend(s, b.secret)).toBe(429);
    await settle();
    await delivered(7); // 3 key, 3 team, the provider's 50 % (30 of 60)
    expect(fired(receiver, 'team')).toEqual([50, 80, 100]);
    expect(events(receiver).filter((e) => e.scope.kind === 'team')[2]).toMatchObject({ scope: { kind: 'team', id: 'growth', name: 'growth' }, used: 15, limit: 15 });
    expect(fired(receiver, 'provider')).toEqual([50]);
    for (let i = 0; i < 6; i++) expect(await spend(s, c.secret)).toBe(200); // 48: 80 %
    await settle();
    await delivered(8);
    for (let i = 0; i < 4; i++) expect(await spend(s, c.secret)).toBe(200); // 60
    expect(await spend(s, c.secret)).toBe(429);
    await settle();
    await delivered(9);
    expect(fired(receiver, 'provider')).toEqual([50, 80, 100]);
    expect(events(receiver).at(-1)).toMatchObject({ scope: { kind: 'provider', id: 'provider', name: 'provider' }, used: 60, limit: 60 });
  });

  it('lists every alert in /admin/notifications with its delivery, and the gauges and counters in /metrics (promtool-clean)', async () => {
    const r = await s.get('/admin/notifications?limit=4', { key: null, headers: { authorization: `Bearer ${TOKEN}` } });
    expect(r.status).toBe(200);
    expect(r.json.alerts).toHaveLength(4);
    expect(r.json.alerts[0]).toMatchObject({ scope: { kind: 'provider' }, threshold_percent: 100, deliveries: [{ webhook: 'ops', state: 'delivered', attempts: 1, last_status: 200 }] });
    const next = await s.get(`/admin/notifications?cursor=${r.json.next_cursor}&limit=1000`, { key: null, headers: { authorization: `Bearer ${TOKEN}` } });
    expect(next.json.alerts).toHaveLength(5);
    expect(next.json.next_cursor).toBeNull();
    for (const [query, code, message] of [
      ['limit=0', 'INVALID_PARAMETER', /^limit: expected a whole number from 1 to 1000/],
      ['limit=1&limit=2', 'INVALID_PARAMETER', /^limit:/],
      ['cursor=bm9wZQ', 'INVALID_PARAMETER', /^cursor: not a cursor this API handed out/],
      ['scope=key', 'UNKNOWN_PARAMETER', /^scope: unknown parameter; allowed: limit, cursor/],
    ] as const) {
      const bad = await s.get(`/admin/notifications?${query}`, { key: null, headers: { authorization: `Bearer ${TOKEN}` } });
      expect(bad.status, query).toBe(400);
      expect(bad.json.error.code, query).toBe(code);
      expect(bad.json.error.message, query).toMatch(message);
      expect(bad.json.error.request_id).toBe(bad.headers['x-request-id']);
    }
    expect((await s.get('/admin/notifications', { key: null })).status).toBe(401);

    const text = (await s.get('/metrics', { key: null })).text;
    expect(promtool(['check', 'metrics'], { input: text }).code).toBe(0);
    expect(text).toContain(`tollgate_budget_remaining_credits{scope_kind="key",scope="${a.id}",period="day"} 0`);
    expect(text).toContain(`tollgate_budget_limit_credits{scope_kind="team",scope="growth",period="day"} 15`);
    expect(text).toContain('tollgate_budget_remaining_credits{scope_kind="provider",scope="provider",period="day"} 0');
    expect(text).toContain('tollgate_budget_alerts_total{threshold="80"} 3');
    expect(text).toContain('tollgate_webhook_deliveries_total{result="delivered"} 9');
    expect(text).toContain('tollgate_webhook_deliveries_total{result="failed"} 0');
  });

  it('a new period fires the thresholds again, with the new period start', async () => {
    clock.set(Date.UTC(2026, 2, 11, 0, 5));
    await settle();
    for (let i = 0; i < 5; i++) expect(await spend(s, a.secret)).toBe(200);
    await settle();
    await delivered(12);
    const today = events(receiver).slice(9);
    expect(today.map((e) => [e.scope.kind, e.threshold_percent, e.period_start])).toEqual([
      ['key', 50, '2026-03-11T00:00:00.000Z'],
      ['key', 80, '2026-03-11T00:00:00.000Z'],
      ['key', 100, '2026-03-11T00:00:00.000Z'],
    ]);
    expect(new Set(events(receiver).map((e) => e.id)).size).toBe(12);
  });
});
