import { hasLoneSurrogate, parseInputTime } from '../domain/typed-input.js';
import { ENDPOINT_NAMES, STRATEGIES } from '../domain/endpoints.js';
import type { Config } from '../config.js';
import { formatBudgets, parseBudgets } from '../domain/credits.js';
import { formatRatePolicies, parseRatePolicies } from '../domain/rate-limit.js';
import type { Keys, MaybePromise } from '../store/ports.js';
import type { ApiKey, KeyPatch } from '../domain/keys.js';
import { newTeamName } from '../domain/teams.js';

/**
 * Key management shared by the CLI and the admin API: one validation of names, policies,
 * budgets, scopes and times, so the two can never disagree about what a key may be.
 */

/** A bad field: `field` is the admin API's JSON name; the CLI maps it to its flag. */
export class KeyInputError extends Error {
  override name = 'KeyInputError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** Scope name of the proxied non-lookup /v1 paths. */
export const PASSTHROUGH_SCOPE = 'passthrough';
export const SCOPE_ENDPOINTS: readonly string[] = [...ENDPOINT_NAMES, PASSTHROUGH_SCOPE];

/** Fields as the admin API's JSON and the CLI's flags give them. */
export interface KeyInput {
  name?: unknown;
  /** The key's team (domain/teams.ts); null or "none": no team. */
  team?: unknown;
  /** Deprecated alias of `team` (its name before teams), accepted on input until the next release. */
  owner?: unknown;
  /** `600/minute,20000/day`; null or "none": no rate limit. */
  rate?: unknown;
  /** `1000/month`; null or "none": no credit budget. */
  credits?: unknown;
  /** Array or comma list; null or "all": every endpoint. */
  endpoints?: unknown;
  strategies?: unknown;
  /** ISO 8601; null or "never": no expiry. */
  expires_at?: unknown;
  cache_isolated?: unknown;
}

const str = (field: string, v: unknown): string => {
  if (typeof v !== 'string') throw new KeyInputError(field, 'must be a string');
  if (hasLoneSurrogate(v)) throw new KeyInputError(field, 'is not valid Unicode (a lone surrogate)');
  return v.trim();
};

function nullable<T>(field: string, v: unknown, none: string, parse: (s: string) => T): T | null {
  if (v === null) return null;
  const s = str(field, v);
  return s.toLowerCase() === none ? null : parse(s);
}

/** Parse a comma list (or array) against allowed names; a typo must fail loudly, not silently deny. */
export function listInput(field: string, v: unknown, allowed: readonly string[]): string[] {
  const items = (Array.isArray(v) ? v.map((x) => str(field, x)) : str(field, v).split(',')).map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) throw new KeyInputError(field, `give at least one of ${allowed.join(', ')}`);
  for (const it of items) if (!allowed.includes(it)) throw new KeyInputError(field, `unknown value '${it}'; allowed: ${allowed.join(', ')}`);
  return [...new Set(items)];
}

export function isoTime(field: string, v: string): number {
  const t = parseInputTime(v);
  if (t === null) throw new KeyInputError(field, 'expected an ISO 8601 time such as 2027-01-31T00:00:00Z (a day the calendar has, before 9999-12-31)');
  return t;
}

/** The longest rotation overlap: the old secret works at most a year beside the new one. */
const MAX_DURATION_MS = 366 * 86_400_000;

/** `90s`, `15m`, `24h`, `7d` or plain seconds → milliseconds. */
export function durationMs(field: string, v: unknown): number {
  const s = typeof v === 'number' ? String(v) : str(field, v);
  const m = /^([0-9]{1,9})([smhd]?)$/.exec(s);
  if (!m) throw new KeyInputError(field, `expected a duration such as 0, 90s, 15m, 24h or 7d, got '${s}'`);
  const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
  const ms = Number(m[1]) * unit * 1000;
  if (ms > MAX_DURATION_MS) throw new KeyInputError(field, `at most 366d, got '${s}'`);
  return ms;
}

function wrap<T>(field: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof KeyInputError) throw err;
    throw new KeyInputError(field, (err as Error).message);
  }
}

/** The field of a KeyInputError about the input as a whole (an update that changes nothing), not one of its fields. */
export const WHOLE_INPUT = '(body)';

/** Validate the given fields into a patch; absent fields stay absent. */
export function parseKeyInput(input: KeyInput): KeyPatch {
  const p: KeyPatch = {};
  if (input.name !== undefined) {
    const name = str('name', input.name);
    if (name.length === 0 || name.length > 200) throw new KeyInputError('name', 'must be 1 to 200 characters');
    // As a team name: a NUL in particular is text PostgreSQL cannot hold, and would stop migrate-data for good.
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(name)) throw new KeyInputError('name', 'must not contain control characters');
    p.name = name;
  }
  if (input.team !== undefined && input.owner !== undefined) throw new KeyInputError('owner', "is the deprecated name of 'team': give one of them");
  const team = input.team !== undefined ? { field: 'team', v: input.team } : input.owner !== undefined ? { field: 'owner', v: input.owner } : null;
  if (team) p.team = nullable(team.field, team.v, 'none', (s) => wrap(team.field, () => newTeamName(s)));
  if (input.rate !== undefined) p.rate = nullable('rate', input.rate, 'none', (s) => wrap('rate', () => formatRatePolicies(parseRatePolicies(s))));
  if (input.credits !== undefined) p.credits = nullable('credits', input.credits, 'none', (s) => wrap('credits', () => formatBudgets(parseBudgets(s))));
  if (input.endpoints !== undefined) p.endpoints = input.endpoints === null || input.endpoints === 'all' ? null : listInput('endpoints', input.endpoints, SCOPE_ENDPOINTS);
  if (input.strategies !== undefined) p.strategies = input.strategies === null || input.strategies === 'all' ? null : listInput('strategies', input.strategies, STRATEGIES);
  if (input.expires_at !== undefined) p.expiresAt = nullable('expires_at', input.expires_at, 'never', (s) => isoTime('expires_at', s));
  if (input.cache_isolated !== undefined) {
    if (typeof input.cache_isolated !== 'boolean') throw new KeyInputError('cache_isolated', 'must be true or false');
    p.cacheIsolated = input.cache_isolated;
  }
  return p;
}

export type KeyDefaults = Readonly<Config['keys']['defaults']>;

/*
 * The writes below take the change's actor (domain/audit.ts): the store records the change in
 * the audit log with it, in the change's own transaction.
 */

/** Create a key; rate and credits not given come from `keys.defaults`. The secret is returned once. */
export function createKey(store: Keys, defaults: KeyDefaults, input: KeyInput, actor: string): MaybePromise<{ key: ApiKey; secret: string }> {
  const p = parseKeyInput(input);
  if (p.name === undefined) throw new KeyInputError('name', 'is required');
  return store.create({
    name: p.name,
    team: p.team ?? null,
    rate: p.rate === undefined ? defaults.rate : p.rate,
    credits: p.credits === undefined ? defaults.credits : p.credits,
    endpoints: p.endpoints ?? null,
    strategies: p.strategies ?? null,
    expiresAt: p.expiresAt ?? null,
    cacheIsolated: p.cacheIsolated ?? false,
  }, actor);
}

/** Null when there is no such key. A running server applies the change on its next request. */
export function updateKey(store: Keys, id: string, input: KeyInput, actor: string): MaybePromise<ApiKey | null> {
  const p = parseKeyInput(input);
  if (Object.keys(p).length === 0) throw new KeyInputError(WHOLE_INPUT, 'nothing to change');
  return store.update(id, p, actor);
}

export type RotateResult = { ok: true; key: ApiKey; secret: string } | { ok: false; reason: 'not_found' | 'revoked' };

export async function rotateKey(store: Keys, id: string, overlap: unknown, actor: string): Promise<RotateResult> {
  const overlapMs = overlap === undefined ? 0 : durationMs('overlap', overlap);
  const k = await store.get(id);
  if (!k) return { ok: false, reason: 'not_found' };
  const r = await store.rotate(id, overlapMs, actor);
  return r ? { ok: true, ...r } : { ok: false, reason: 'revoked' };
}

/** The public view of a key: everything but the secret, which is never stored. */
export function keyView(k: ApiKey, now: number) {
  const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
  const state = k.revokedAt !== null && k.revokedAt <= now ? 'revoked' : k.expiresAt !== null && k.expiresAt <= now ? 'expired' : 'active';
  return {
    id: k.id,
    name: k.name,
    team: k.team,
    prefix: k.prefix,
    state,
    created_at: iso(k.createdAt),
    updated_at: iso(k.updatedAt),
    expires_at: iso(k.expiresAt),
    revoked_at: iso(k.revokedAt),
    last_used_at: iso(k.lastUsedAt),
    rate: k.rate,
    credits: k.credits,
    endpoints: k.endpoints,
    strategies: k.strategies,
    cache_isolated: k.cacheIsolated,
    previous_secret_expires_at: k.previousExpiresAt !== null && k.previousExpiresAt > now ? iso(k.previousExpiresAt) : null,
  };
}
