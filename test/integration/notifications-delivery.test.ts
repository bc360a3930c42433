import { afterEach, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

/*
 * Webhook delivery against a receiver on loopback that misbehaves: retried with back-off after a
 * 500, a 429 with Retry-After and a hang past the timeout, then delivered once; a hanging receiver
 * never slows /v1; deliveries pending when the gateway stops are sent by the next one, with the
 * same event id, and the threshold does not fire again. The real clock: retries are due by it.
 */
const TOKEN = 'admin-token-for-delivery-tests-0123456';
const SECRET = 'whsec-delivery-tests-0123456789abcdef';

let s: Stack | null = null;
let receiver: Receiver | null = null;
afterEach(async () => {
  await s?.close();
  await receiver?.close();
  s = null;
  receiver = null;
});

async function until(ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function stackFor(r: Receiver, delivery: Record<string, number>, evaluateIntervalMs = 100): Promise<Stack> {
  return startStack({
    config: {
      adminToken: TOKEN,
      notifications: { thresholds: [100], evaluateIntervalMs, webhooks: [{ url: r.url, secret: SECRET }], delivery: { pollIntervalMs: 50, ...delivery } },
    },
  });
}

async function alerts(st: Stack) {
  const r = await st.get('/admin/notifications', { key: null, headers: { authorization: `Bearer ${TOKEN}` } });
  expect(r.status).toBe(200);
  return r.json.alerts as Array<{ id: string; deliveries: Array<{ webhook: string; state: string; attempts: number; last_status: number | null; last_error: string | null }> }>;
}

let org = 0;
const spend = async (st: Stack, key: string) => (await st.get(`/v1/company?org_id=${++org}`, { key })).status;

describe('webhook delivery', () => {
  it('retries a 500, a 429 (not before its Retry-After) and a hang past the timeout, then delivers once; /v1 answers meanwhile', async () => {
    receiver = await startReceiver();
    receiver.script([{ status: 500 }, { status: 429, headers: { 'retry-after': '1' } }, 'hang'], { status: 200 });
    s = await stackFor(receiver, { timeoutMs: 1_500, baseDelayMs: 50, maxDelayMs: 2_000, maxAttempts: 5 });
    const key = s.newKey({ name: 'spender', credits: '3/day' });
    expect(await spend(s, key.secret)).toBe(200);

    // The third attempt hangs: while it does, /v1 answers (misses and hits) as ever.
    await until(() => receiver!.received.length === 3);
    const free = s.newKey({ name: 'free' });
    const t0 = performance.now();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => s!.get(`/v1/company?org_id=${i % 2 ? 1 : ++org}`, { key: free.secret })));
    const took = performance.now() - t0;
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(receiver.received[2]!.ended).toBeUndefined(); // still hanging when every answer was in
    expect(took).toBeLessThan(1_000);

    await until(() => receiver!.received.length === 4);
    const got = receiver.received;
    const ids = new Set(got.map((r) => r.headers['x-tollgate-event-id']));
    expect(ids.size).toBe(1);
    expect(got.map((r) => r.headers['x-tollgate-delivery-attempt'])).toEqual(['1', '2', '3', '4']);
    expect(got[2]!.at - got[1]!.at).toBeGreaterThanOrEqual(1_000); // Retry-After: 1
    await until(() => got[2]!.ended !== undefined);
    expect(got[2]!.ended! - got[2]!.at).toBeGreaterThanOrEqual(1_400); // abandoned at the timeout
    const [alert] = await alerts(s);
    expect(alert!.deliveries).toEqual([
      { webhook: receiver.url.replace(/^http:\/\/|\/hook$/g, ''), state: 'delivered', attempts: 4, next_attempt_at: null, last_status: 200, last_error: null, delivered_at: expect.any(String) },
    ]);
    const text = (await s.get('/metrics', { key: null })).text;
    expect(text).toContain('tollgate_webhook_deliveries_total{result="retry"} 3');
    expect(text).toContain('tollgate_webhook_deliveries_total{result="delivered"} 1');
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received).toHaveLength(4);
  }, 30_000);

  it('gives up after maxAttempts and records the delivery as failed, still listed; a 4xx is failed at once', async () => {
    receiver = await startReceiver({ status: 503 });
    s = await stackFor(receiver, { timeoutMs: 500, baseDelayMs: 20, maxDelayMs: 40, maxAttempts: 3 });
    expect(await spend(s, s.newKey({ name: 'k1', credits: '3/day' }).secret)).toBe(200);
    await until(() => receiver!.received.length === 3);
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received).toHaveLength(3);
    const [failed] = await alerts(s);
    expect(failed!.deliveries[0]).toMatchObject({ state: 'failed', attempts: 3, last_status: 503, last_error: expect.stringMatching(/503.*gave up after 3 attempts/) });

    receiver.script([], { status: 410 });
    expect(await spend(s, s.newKey({ name: 'k2', credits: '3/day' }).secret)).toBe(200);
    await until(() => receiver!.received.length === 4);
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received).toHaveLength(4);
    const [refused] = await alerts(s);
    expect(refused!.deliveries[0]).toMatchObject({ state: 'failed', attempts: 1, last_status: 410 });
    expect((await s.get('/metrics', { key: null })).text).toContain('tollgate_webhook_deliveries_total{result="failed"} 2');
  }, 30_000);

  it('deliveries pending when the gateway stops are sent by the next one: nothing lost, each event delivered once, the threshold not fired again', async () => {
    receiver = await startReceiver({ status: 503 });
    s = await stackFor(receiver, { timeoutMs: 500, baseDelayMs: 400, maxDelayMs: 400, maxAttempts: 50 });
    const keys = [s.newKey({ name: 'r1', credits: '3/day' }), s.newKey({ name: 'r2', credits: '3/day' })];
    for (const k of keys) expect(await spend(s, k.secret)).toBe(200);
    await until(() => new Set(receiver!.received.map((r) => r.headers['x-tollgate-event-id'])).size === 2);
    const ids = new Set(receiver.received.map((r) => r.headers['x-tollgate-event-id']));
    // Stopped while both wait for a retry; the receiver comes back while no gateway runs.
    await s.app.close();
    const whileDown = receiver.received.length;
    receiver.script([], { status: 200 });
    await s.restart();
    await until(() => receiver!.received.length >= whileDown + 2);
    await new Promise((r) => setTimeout(r, 500));
    const after = receiver.received.slice(whileDown);
    expect(after.map((r) => r.headers['x-tollgate-event-id']).sort()).toEqual([...ids].sort());
    expect((await alerts(s)).map((a) => a.deliveries[0]!.state)).toEqual(['delivered', 'delivered']);
    // The new process evaluated the same crossings: recorded already, nothing fired again.
    await s.app.notifier.evaluateNow();
    expect(await alerts(s)).toHaveLength(2);
    expect(receiver.received).toHaveLength(whileDown + 2);
  }, 30_000);

  it('a charge nudges the evaluator: the alert is sent within a second, not at the next (hourly) interval', async () => {
    receiver = await startReceiver();
    s = await stackFor(receiver, {}, 3_600_000);
    const t0 = Date.now();
    expect(await spend(s, s.newKey({ name: 'nudged', credits: '3/day' }).secret)).toBe(200);
    await until(() => receiver!.received.length === 1, 3_000);
    expect(Date.now() - t0).toBeLessThan(2_000);
  }, 30_000);
});
