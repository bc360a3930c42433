import { Agent, request } from 'undici';
import { alertEvent, retryAfterMs, retryDelayMs, signatureHeader, type AttemptOutcome, type ClaimedDelivery } from '../domain/budget-alerts.js';
import type { Clock } from '../domain/clock.js';
import type { BudgetAlerts } from '../store/ports.js';

export interface Webhook {
  readonly name: string;
  readonly url: string;
  readonly secret: string;
}

export interface DeliverySettings {
  readonly timeoutMs: number;
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly pollIntervalMs: number;
}

export interface DeliveryLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** How many deliveries one pass claims; a full batch is followed by another pass at once. */
const BATCH = 16;

/**
 * The outbox's sender: claims due deliveries (leased: no other process sends them meanwhile),
 * POSTs each alert's event to its webhook, signed, and records the outcome — delivered on a
 * 2xx; on a network error, a timeout, a 5xx, a 408 or a 429 retried with exponential back-off
 * and jitter (never before Retry-After) until `maxAttempts`, then failed; failed at once on any
 * other answer (the receiver refuses it: retrying would change nothing). Runs on its own undici
 * Agent, off the request path: a receiver that hangs holds one of its sockets for `timeoutMs`,
 * never a request. Pending rows outlive the process: the next one (or another replica, once the
 * lease lapses) sends them. So a receiver may see an event twice (a crash between its answer and
 * the record of it): at least once, deduplicated by X-Tollgate-Event-Id.
 */
export class WebhookDelivery {
  private readonly agent: Agent;
  private readonly byName: Map<string, Webhook>;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly alerts: BudgetAlerts,
    webhooks: readonly Webhook[],
    private readonly settings: DeliverySettings,
    private readonly deps: { clock: Clock; owner: string; log?: DeliveryLog; onResult?: (result: AttemptOutcome['result']) => void; random?: () => number },
  ) {
    this.byName = new Map(webhooks.map((w) => [w.name, w]));
    this.agent = new Agent({ connectTimeout: settings.timeoutMs, headersTimeout: settings.timeoutMs, bodyTimeout: settings.timeoutMs, connections: 8 });
  }

  start(): this {
    this.timer = setInterval(() => this.poke(), this.settings.pollIntervalMs);
    this.timer.unref();
    this.poke();
    return this;
  }

  /** Look for due deliveries now (new alerts were just recorded); a pass under way runs once more. */
  poke(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain().finally(() => {
      this.running = null;
    });
  }

  /** Claim no more; the sends under way end (each within timeoutMs) and are recorded. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
    await this.agent.close().catch(() => {});
  }

  private async drain(): Promise<void> {
    do {
      this.again = false;
      let claimed: ClaimedDelivery[];
      try {
        // Leased past the longest send, so that a live process's delivery is never taken over.
        claimed = await this.alerts.claim(this.deps.owner, this.deps.clock.now(), BATCH, 2 * this.settings.timeoutMs + 5_000);
      } catch (err) {
        this.deps.log?.warn({ err }, 'webhook deliveries not claimed (storage); tried again at the next poll');
        return;
      }
      await Promise.all(claimed.map((d) => this.deliver(d)));
      if (claimed.length === BATCH) this.again = true;
    } while (this.again && !this.stopped);
  }

  private async deliver(d: ClaimedDelivery): Promise<void> {
    const hook = this.byName.get(d.webhook);
    const outcome: AttemptOutcome = hook
      ? await this.send(hook, d)
      : { result: 'failed', status: null, error: 'webhook no longer configured', at: this.deps.clock.now() };
    try {
      await this.alerts.settle(d.alert.id, d.webhook, this.deps.owner, outcome);
    } catch (err) {
      // Its lease lapses and it is sent again: at least once.
      this.deps.log?.warn({ err, event_id: d.alert.id }, 'webhook delivery outcome not recorded; it will be sent again');
      return;
    }
    this.deps.onResult?.(outcome.result);
    const fields = { event_id: d.alert.id, webhook: d.webhook, attempt: d.attempt, status: 'status' in outcome ? outcome.status : null };
    if (outcome.result === 'failed') this.deps.log?.error({ ...fields, error: outcome.error }, 'webhook delivery failed for good');
    else if (outcome.result === 'retry') this.deps.log?.warn({ ...fields, error: outcome.error, next_attempt_at: new Date(outcome.nextAt).toISOString() }, 'webhook delivery failed; retried');
    else this.deps.log?.info(fields, 'webhook delivered');
  }

  private async send(hook: Webhook, d: ClaimedDelivery): Promise<AttemptOutcome> {
    const body = JSON.stringify(alertEvent(d.alert));
    const t = Math.floor(this.deps.clock.now() / 1000);
    let status: number | null = null;
    let retryAfter: string | undefined;
    try {
      const res = await request(hook.url, {
        method: 'POST',
        dispatcher: this.agent,
        body,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'tollgate-webhooks/1',
          'x-tollgate-event-id': d.alert.id,
          'x-tollgate-event-type': 'budget.threshold',
          'x-tollgate-signature': signatureHeader(hook.secret, t, body),
          'x-tollgate-delivery-attempt': String(d.attempt),
        },
        signal: AbortSignal.timeout(this.settings.timeoutMs),
      });
      status = res.statusCode;
      const h = res.headers['retry-after'];
      retryAfter = Array.isArray(h) ? h[0] : h;
      await res.body.dump({ limit: 64 * 1024 }).catch(() => {});
      if (status >= 200 && status < 300) return { result: 'delivered', status, at: this.deps.clock.now() };
      if (status < 500 && status !== 408 && status !== 429) return { result: 'failed', status, error: `the receiver answered ${status}`, at: this.deps.clock.now() };
      return this.retry(d, status, `the receiver answered ${status}`, retryAfter);
    } catch (err) {
      const e = err as Error & { code?: string };
      const why = e.name === 'TimeoutError' || e.name === 'AbortError' ? `no answer within ${this.settings.timeoutMs} ms` : (e.code ?? e.message);
      return this.retry(d, status, why, retryAfter);
    }
  }

  private retry(d: ClaimedDelivery, status: number | null, error: string, retryAfter: string | undefined): AttemptOutcome {
    const now = this.deps.clock.now();
    if (d.attempt >= this.settings.maxAttempts) return { result: 'failed', status, error: `${error} (gave up after ${d.attempt} attempts)`, at: now };
    const { baseDelayMs, maxDelayMs } = this.settings;
    const delay = retryDelayMs(d.attempt, baseDelayMs, maxDelayMs, (this.deps.random ?? Math.random)(), retryAfterMs(retryAfter, now));
    return { result: 'retry', status, error, nextAt: now + delay };
  }
}
