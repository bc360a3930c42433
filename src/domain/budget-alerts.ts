import { createHmac, timingSafeEqual } from 'node:crypto';
import { monotonicFactory } from 'ulid';
import { PROVIDER_SCOPE, type Period } from './credits.js';
import { isTeamScope, TEAM_SCOPE_PREFIX } from './teams.js';

/*
 * Budget notifications (README "Budget notifications"): when a budget's settled usage in a
 * period reaches one of the configured thresholds (a percentage of its limit), one alert is
 * recorded — once per (scope, period, period start, threshold), however many replicas see it —
 * and one delivery per configured webhook is queued with it. Pure rules here: which thresholds
 * a usage has crossed, the event as it is sent, and its signature.
 */

export type ScopeKind = 'key' | 'team' | 'provider';
export const SCOPE_KINDS: readonly ScopeKind[] = ['key', 'team', 'provider'];

/** The kind of a credit scope: a key id, `team:<name>`, or PROVIDER_SCOPE. */
export function scopeKind(scope: string): ScopeKind {
  if (scope === PROVIDER_SCOPE) return 'provider';
  return isTeamScope(scope) ? 'team' : 'key';
}

/** What an alert names: a key's id, a team's name, `provider`. */
export function scopeId(scope: string): string {
  if (scope === PROVIDER_SCOPE) return 'provider';
  return isTeamScope(scope) ? scope.slice(TEAM_SCOPE_PREFIX.length) : scope;
}

/**
 * The thresholds (percent, sorted) that `used` has reached against `limit`. A limit of 0 (a
 * cache-only key) has nothing to warn about: no threshold is ever crossed by it.
 */
export function crossedThresholds(used: number, limit: number, thresholds: readonly number[]): number[] {
  if (limit <= 0) return [];
  // Integers only: used * 100 >= t * limit, no rounding of a percentage.
  return thresholds.filter((t) => used * 100 >= t * limit);
}

/** One threshold reached by one budget in one period, before it is recorded. */
export interface NewBudgetAlert {
  /** The credit scope: a key id, `team:<name>`, PROVIDER_SCOPE. */
  readonly scope: string;
  /** The key's name or the team's name; `provider` for the provider. */
  readonly scopeName: string;
  readonly period: Period;
  readonly periodStart: number;
  readonly periodEnd: number;
  /** Percent of the limit, 1-100. */
  readonly threshold: number;
  /** Settled credits of the period when the crossing was seen. */
  readonly used: number;
  readonly limit: number;
  /** When the evaluator saw it crossed (epoch ms). */
  readonly crossedAt: number;
}

export type DeliveryState = 'pending' | 'delivered' | 'failed';

/** The delivery of one alert to one webhook (by its name). */
export interface AlertDelivery {
  readonly webhook: string;
  readonly state: DeliveryState;
  /** Attempts started so far. */
  readonly attempts: number;
  /** When a pending delivery is next tried. */
  readonly nextAttemptAt: number | null;
  /** The receiver's last HTTP status, if it answered. */
  readonly lastStatus: number | null;
  readonly lastError: string | null;
  readonly deliveredAt: number | null;
}

export interface BudgetAlert extends NewBudgetAlert {
  /** `evt_` + a ULID: the event id receivers deduplicate on (X-Tollgate-Event-Id). */
  readonly id: string;
  readonly deliveries: readonly AlertDelivery[];
}

/** A page of alerts, newest first; `next` where the next (older) page starts. */
export interface BudgetAlertPage {
  readonly alerts: BudgetAlert[];
  readonly next: AlertCursor | null;
}

export interface AlertCursor {
  readonly ts: number;
  readonly id: string;
}

export interface AlertQuery {
  readonly limit: number;
  readonly after?: AlertCursor;
}

export const ALERT_LIMIT_DEFAULT = 50;
export const ALERT_LIMIT_MAX = 1000;

const nextUlid = monotonicFactory();

export function newEventId(now: number): string {
  return 'evt_' + nextUlid(now);
}

/** `<crossed_at>.<id>` in base64url, as /admin/audit's cursors. */
export function encodeAlertCursor(c: AlertCursor): string {
  return Buffer.from(`${c.ts}.${c.id}`).toString('base64url');
}

export function decodeAlertCursor(s: string): AlertCursor | null {
  const m = /^(\d{1,15})\.(evt_[0-9A-Z]{26})$/.exec(Buffer.from(s, 'base64url').toString('utf8'));
  return m ? { ts: Number(m[1]), id: m[2]! } : null;
}

/** A delivery claimed for one attempt: the alert to send, and to which webhook. */
export interface ClaimedDelivery {
  readonly alert: BudgetAlert;
  readonly webhook: string;
  /** This attempt's number, from 1. */
  readonly attempt: number;
}

/** What one attempt ended with. */
export type AttemptOutcome =
  | { readonly result: 'delivered'; readonly status: number; readonly at: number }
  | { readonly result: 'retry'; readonly status: number | null; readonly error: string; readonly nextAt: number }
  | { readonly result: 'failed'; readonly status: number | null; readonly error: string; readonly at: number };

const iso = (t: number) => new Date(t).toISOString();

/** The JSON body POSTed to a webhook (README "Budget notifications" documents every field). */
export function alertEvent(a: BudgetAlert) {
  return {
    id: a.id,
    type: 'budget.threshold' as const,
    scope: { kind: scopeKind(a.scope), id: scopeId(a.scope), name: a.scopeName },
    threshold_percent: a.threshold,
    used: a.used,
    limit: a.limit,
    period: a.period,
    period_start: iso(a.periodStart),
    period_end: iso(a.periodEnd),
    crossed_at: iso(a.crossedAt),
  };
}

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed with the webhook's secret>`. */
export function signatureHeader(secret: string, unixSeconds: number, body: string): string {
  return `t=${unixSeconds},v1=${createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex')}`;
}

/**
 * A receiver's check, as README "Budget notifications" documents it: the header parses, its
 * time is within `toleranceSeconds` of `nowSeconds` (a replayed old delivery is refused), and
 * one of its v1 signatures matches (compared in constant time).
 */
export function verifySignature(secret: string, header: string, body: string, nowSeconds: number, toleranceSeconds = 300): boolean {
  const parts = header.split(',').map((p) => p.trim().split('='));
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  if (!Number.isInteger(t) || Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(`${t}.${body}`).digest('hex'));
  return parts.some(([k, v]) => k === 'v1' && v !== undefined && v.length === expected.length && timingSafeEqual(Buffer.from(v), expected));
}

/**
 * When a failed attempt `attempt` (from 1) is tried again: exponential from `baseMs`, capped at
 * `maxMs`, with full jitter (`random` in [0, 1)) so that receivers coming back are not hit by every
 * queued delivery at once; never sooner than the receiver's Retry-After.
 */
export function retryDelayMs(attempt: number, baseMs: number, maxMs: number, random: number, retryAfterMs: number | null): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 30));
  const backoff = Math.round(ceiling / 2 + (random * ceiling) / 2);
  return Math.max(backoff, Math.min(retryAfterMs ?? 0, maxMs));
}

/** Retry-After as seconds or an HTTP date, in ms from `now`; null when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now: number): number | null {
  if (!value) return null;
  if (/^\d{1,9}$/.test(value.trim())) return Number(value.trim()) * 1000;
  const t = Date.parse(value);
  return Number.isNaN(t) ? null : Math.max(0, t - now);
}
