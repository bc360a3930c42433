import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { webhookName } from '../config-notifications.js';
import type { Config } from '../config.js';
import type { AttemptOutcome } from '../domain/budget-alerts.js';
import type { Clock } from '../domain/clock.js';
import type { Budget } from '../domain/credits.js';
import type { StorageBackend } from '../store/backend.js';
import { WebhookDelivery, type DeliveryLog } from './delivery.js';
import { BudgetEvaluator, type BudgetObserver } from './evaluator.js';

/** How long after a charge its budgets are evaluated (notifications.evaluateIntervalMs if shorter). */
const NUDGE_MS = 500;

export interface NotifierDeps {
  readonly stores: Pick<StorageBackend, 'keys' | 'teams' | 'credits' | 'alerts'>;
  readonly clock: Clock;
  readonly providerBudgets: readonly Budget[];
  readonly log: DeliveryLog;
  readonly observer?: BudgetObserver & { delivery(result: AttemptOutcome['result']): void };
}

/**
 * Budget notifications in a serving process (README "Budget notifications"): the evaluator on a
 * timer (at once at start, so the budget gauges exist from the first scrape) and the webhook
 * sender, poked whenever the evaluator records an alert. Both run off the request path; neither
 * can fail a request, and a failure of either is logged and retried at its next turn.
 */
export class Notifier {
  readonly evaluator: BudgetEvaluator;
  readonly delivery: WebhookDelivery;
  private timer: NodeJS.Timeout | null = null;
  private nudged: NodeJS.Timeout | null = null;
  private pass: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly config: Readonly<Config>,
    private readonly deps: NotifierDeps,
  ) {
    const n = config.notifications;
    const webhooks = n.webhooks.map((w) => ({ name: webhookName(w), url: w.url, secret: w.secret }));
    this.evaluator = new BudgetEvaluator({
      stores: deps.stores,
      clock: deps.clock,
      providerBudgets: deps.providerBudgets,
      thresholds: n.thresholds,
      webhooks: webhooks.map((w) => w.name),
      ...(deps.observer && { observer: deps.observer }),
      onInvalidBudget: (owner, err) => deps.log.warn({ scope: owner, err: err.message }, 'stored credit budget unreadable; not watched for notifications'),
    });
    // Unique per process: a lease names the process sending, so a restarted one does not mistake a dead one's lease for its own.
    const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.delivery = new WebhookDelivery(deps.stores.alerts, webhooks, n.delivery, {
      clock: deps.clock,
      owner,
      log: deps.log,
      ...(deps.observer && { onResult: (r: AttemptOutcome['result']) => deps.observer!.delivery(r) }),
    });
  }

  start(): this {
    this.evaluateNow();
    this.timer = setInterval(() => this.evaluateNow(), this.config.notifications.evaluateIntervalMs);
    this.timer.unref();
    this.delivery.start();
    return this;
  }

  /**
   * A charge was just recorded: evaluate soon rather than at the next interval. Debounced — one
   * pass NUDGE_MS after the first charge, however many follow — so that a burst of requests costs
   * one pass. Called on the request path: it only arms a timer.
   */
  nudge(): void {
    if (this.nudged || this.stopped) return;
    this.nudged = setTimeout(() => {
      this.nudged = null;
      void this.evaluateNow();
    }, Math.min(NUDGE_MS, this.config.notifications.evaluateIntervalMs));
    this.nudged.unref();
  }

  /**
   * An evaluation pass that starts now, or, while one runs, right after it (one queued pass for
   * any number of callers): what it reads is at least as recent as the call.
   */
  evaluateNow(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.pass) {
      this.queued ??= this.pass.then(() => {
        this.queued = null;
        return this.evaluateNow();
      });
      return this.queued;
    }
    this.pass = this.evaluator
      .evaluate()
      .then(
        (fresh) => {
          if (fresh.length === 0) return;
          for (const a of fresh) this.deps.log.info({ event_id: a.id, scope: a.scope, period: a.period, threshold: a.threshold, used: a.used, limit: a.limit }, 'budget threshold crossed');
          this.delivery.poke();
        },
        (err: unknown) => this.deps.log.warn({ err }, 'budgets not evaluated for notifications; tried again at the next interval'),
      )
      .finally(() => {
        this.pass = null;
      });
    return this.pass;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.nudged) clearTimeout(this.nudged);
    await this.queued;
    await this.pass;
    await this.delivery.stop();
  }
}
