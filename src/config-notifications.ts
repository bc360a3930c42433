import { z } from 'zod';
import { ms } from './config-timers.js';

/* The `notifications` section of the configuration (config-schema.ts holds the rest). */

/**
 * Budget notifications (README "Budget notifications"). Webhooks are a list: from the
 * environment, TOLLGATE_NOTIFICATIONS_WEBHOOKS (a JSON array) or, to keep the secrets in a
 * file, TOLLGATE_NOTIFICATIONS_WEBHOOKS_FILE. `config check` masks every webhook's secret.
 */
const WebhookSchema = z.strictObject({
  /** Shown in /admin/notifications and the metrics; defaults to the URL's host. Unique. */
  name: z.string().regex(/^[A-Za-z0-9._:-]{1,64}$/, 'must be 1 to 64 letters, digits, dots, dashes, colons or underscores').optional(),
  url: z.url({ protocol: /^https?$/ }),
  /** The HMAC-SHA256 key of X-Tollgate-Signature; the receiver holds the same. */
  secret: z.string().min(16, 'must be at least 16 characters'),
});

export const NotificationsSchema = z
  .strictObject({
    /** Percentages of a budget's limit; each fires once per budget and period. */
    thresholds: z
      // Coerced: from the environment a comma-separated list arrives as strings ("50,80,100").
      .array(z.coerce.number<unknown>().int().min(1).max(100))
      .min(1)
      .superRefine((ts, ctx) => {
        if (new Set(ts).size !== ts.length) ctx.addIssue({ code: 'custom', message: 'must not repeat a threshold' });
        if (ts.some((t, i) => i > 0 && t < ts[i - 1]!)) ctx.addIssue({ code: 'custom', message: 'must be in ascending order, e.g. [50, 80, 100]' });
      })
      .default([50, 80, 100]),
    /** How often every budget's usage is compared with the thresholds, off the request path. */
    evaluateIntervalMs: ms.min(100).default(10_000),
    webhooks: z
      .array(WebhookSchema)
      .superRefine((ws, ctx) => {
        // Run even when an element failed its own checks: compare only those whose name can be read.
        const names = ws.filter((w) => w.name !== undefined || URL.canParse(w.url)).map(webhookName);
        if (new Set(names).size !== names.length) ctx.addIssue({ code: 'custom', message: 'two webhooks have the same name (by default the URL\'s host): give each a distinct name' });
      })
      .meta({ sensitive: 'secret' })
      .default([]),
    delivery: z
      .strictObject({
        /** One POST's whole time (connect, headers, body) before it counts as failed. */
        timeoutMs: ms.max(60_000).default(5_000),
        /** Attempts in all, the first included; after the last the delivery is recorded as failed. */
        maxAttempts: z.number().int().min(1).max(50).default(8),
        /** First retry delay; doubled per attempt (with jitter) up to maxDelayMs. */
        baseDelayMs: ms.default(1_000),
        maxDelayMs: ms.max(86_400_000).default(300_000),
        /** How often due deliveries are looked for (new alerts are sent at once). */
        pollIntervalMs: ms.min(50).default(1_000),
      })
      .prefault({}),
  })
  .prefault({});

/** A webhook's name: the given one, or its URL's host. */
export function webhookName(w: { name?: string | undefined; url: string }): string {
  return w.name ?? new URL(w.url).host;
}

