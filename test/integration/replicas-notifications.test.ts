import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { profile, startCluster, until, type Cluster } from '../helpers/replica-processes.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

/**
 * Budget notifications over three `serve` processes on real PostgreSQL and Redis: every replica
 * evaluates every budget every 100 ms, and still each threshold of a key's, a team's and the
 * provider's budget reaches the webhook once — the alert's unique row decides which replica
 * records it, and its delivery is claimed by one replica (FOR UPDATE SKIP LOCKED, leased).
 */
const SECRET = 'whsec-replica-tests-0123456789abcdef';

interface Event {
  id: string;
  scope: { kind: string; id: string };
  threshold_percent: number;
}

describe('budget notifications over three replicas', () => {
  let c: Cluster;
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
    c = await startCluster({
      config: {
        upstream: { budget: { day: 60 } },
        notifications: { evaluateIntervalMs: 100, webhooks: [{ name: 'ops', url: receiver.url, secret: SECRET }], delivery: { pollIntervalMs: 50 } },
      },
    });
  }, 30_000);
  afterAll(async () => {
    await c?.close();
    await receiver?.close();
  }, 30_000);

  it('each threshold of a key, a team and the provider budget is delivered once, whichever replicas served the spending', async () => {
    const key = await c.newKey({ credits: '15/day' });
    expect((await c.admin(0, 'PUT', '/teams/growth', { credits: '15/day' })).status).toBe(200);
    const member = await c.newKey({ team: 'growth' });
    const other = await c.newKey({});
    let n = 0;
    const spend = async (secret: string, times: number) => {
      for (let i = 0; i < times; i++) expect((await c.get(n, profile(`notify-${n++}`), secret)).status).toBe(200);
    };
    // Step by step, so that every replica sees each crossing while the others do too.
    for (const times of [3, 1, 1]) {
      await spend(key.secret, times);
      await new Promise((r) => setTimeout(r, 300));
    }
    await spend(member.secret, 5); // the provider at 30 of 60: 50 %
    await spend(other.secret, 10); // 60: 80 % and 100 %
    const events = () => receiver.received.map((r) => JSON.parse(r.body) as Event);
    await until('9 deliveries', 10_000, async () => (receiver.received.length >= 9 ? true : undefined));
    // A few more evaluation and delivery rounds on every replica: nothing more arrives.
    await new Promise((r) => setTimeout(r, 1_000));
    const got = events()
      .map((e) => `${e.scope.kind}:${e.threshold_percent}`)
      .sort();
    expect(got).toEqual(['key:100', 'key:50', 'key:80', 'provider:100', 'provider:50', 'provider:80', 'team:100', 'team:50', 'team:80']);
    expect(new Set(events().map((e) => e.id)).size).toBe(9);
    for (const r of receiver.received) {
      const [t, v1] = String(r.headers['x-tollgate-signature']).split(',').map((p) => p.split('=')[1]!);
      expect(v1).toBe(createHmac('sha256', SECRET).update(`${t}.${r.body}`).digest('hex'));
    }
    // Every replica lists the same alerts; the alerts counters of the three add up to 9.
    for (const i of [0, 1, 2]) {
      const list = await c.admin(i, 'GET', '/notifications');
      expect(list.json.alerts, `replica ${i}`).toHaveLength(9);
      expect(list.json.alerts.every((a: { deliveries: Array<{ state: string }> }) => a.deliveries[0]!.state === 'delivered')).toBe(true);
    }
    let alerted = 0;
    let delivered = 0;
    for (const i of [0, 1, 2]) {
      const text = await metricsText(c, i);
      alerted += sum(text, /^tollgate_budget_alerts_total\{threshold="\d+"\} (\d+)$/gm);
      delivered += sum(text, /^tollgate_webhook_deliveries_total\{result="delivered"\} (\d+)$/gm);
      expect(text).toMatch(new RegExp(`^tollgate_budget_remaining_credits\\{scope_kind="key",scope="${key.id}",period="day"\\} 0$`, 'm'));
    }
    expect(alerted).toBe(9);
    expect(delivered).toBe(9);
  }, 60_000);
});

async function metricsText(c: Cluster, i: number): Promise<string> {
  const res = await fetch(`${c.replicas[i]!.url}/metrics`);
  return res.text();
}

function sum(text: string, re: RegExp): number {
  return [...text.matchAll(re)].reduce((s, m) => s + Number(m[1]), 0);
}
