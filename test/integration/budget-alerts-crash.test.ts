import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import { FakeClock } from '../../src/domain/clock.js';
import { openBackend } from '../../src/store/open.js';

/*
 * The embedded backend's outbox across a crash mid-send: the dead server's lease would hold its
 * delivery for the lease's length; the next server frees every lease when it starts (one server
 * per data directory: any lease it finds is a dead process's), and sends the delivery at once.
 */
const T0 = Date.UTC(2026, 0, 1, 10);
let dir: string | null = null;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = null;
});

describe('the embedded outbox across a crash', () => {
  it('a delivery leased by a server that died is claimed by the next server at once, as the same event', async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-outbox-'));
    const config = validateConfig({ dataDir: dir, upstream: { url: 'http://127.0.0.1:1', apiKey: 'outbox-test-key-000000' } });
    const clock = new FakeClock(T0);
    const first = openBackend(config, { role: 'server', clock });
    const crossing = { scope: 'key_x', scopeName: 'x', period: 'day', periodStart: T0 - 36_000_000, periodEnd: T0 + 50_400_000, threshold: 100, used: 3, limit: 3, crossedAt: T0 } as const;
    const [alert] = first.alerts.record([crossing], ['ops'], T0);
    expect(first.alerts.claim('dead-server', T0, 10, 3_600_000)).toHaveLength(1);
    await first.abandon(); // kill -9 mid-send: the lease stays in the row

    const next = openBackend(config, { role: 'server', clock });
    try {
      const claimed = next.alerts.claim('next-server', T0 + 1, 10, 60_000);
      expect(claimed.map((c) => [c.alert.id, c.webhook, c.attempt])).toEqual([[alert!.id, 'ops', 2]]);
      // Recorded again at start, the crossing is not a new alert.
      expect(next.alerts.record([{ ...crossing, crossedAt: T0 + 2 }], ['ops'], T0 + 2)).toEqual([]);
    } finally {
      await next.close();
    }
  });
});
