import { monotonicFactory } from 'ulid';
import type { ApiKey } from './keys.js';
import type { PurgeFilter } from './purge-filter.js';

/*
 * The audit log (README "Audit log"): one entry per admin change, whoever made it (the admin
 * API, the CLI; the dashboard's sessions later), with what it changed. Entries are appended,
 * never changed or deleted. Pure rules here; every backend stores them (store/ports.ts AuditLog).
 */

/** Every admin write that exists: a new one gets its action here (and a line in the README). */
export const AUDIT_ACTIONS = ['key.create', 'key.update', 'key.rotate', 'key.revoke', 'team.set', 'team.delete', 'cache.purge'] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export function isAuditAction(s: string): s is AuditAction {
  return (AUDIT_ACTIONS as readonly string[]).includes(s);
}

/** Who the admin API's changes are by unless `adminTokenLabel` says otherwise (config-schema.ts). */
export const ADMIN_API_ACTOR = 'admin-api';

/** The command line's actor (`cli:<OS user>`, or this alone without a user name). */
export const CLI_ACTOR = 'cli';

/** A JSON object of what changed: snake_case fields, never a secret or a secret's hash. */
export type AuditState = Readonly<Record<string, unknown>>;

/** What a change appends; the store gives it its id and time. */
export interface NewAuditEntry {
  readonly actor: string;
  readonly action: AuditAction;
  /** What was changed: a key id, or a purge's filter (purgeTarget). */
  readonly target: string;
  /** The changed fields as they were (null: the thing did not exist, or a purge). */
  readonly before: AuditState | null;
  /** The changed fields as they became. */
  readonly after: AuditState | null;
}

export interface AuditEntry extends NewAuditEntry {
  /** `aud_` + a ULID. */
  readonly id: string;
  /** Epoch ms, the store's clock when the change was made. */
  readonly ts: number;
}

/** A position in the log, newest first: entries strictly older than (ts, id). */
export interface AuditCursor {
  readonly ts: number;
  readonly id: string;
}

export interface AuditQuery {
  /** Inclusive lower bound of ts. */
  readonly from?: number;
  /** Exclusive upper bound of ts. */
  readonly to?: number;
  /** An actor, or an actor's kind: `cli` also matches `cli:alice`. */
  readonly actor?: string;
  readonly action?: AuditAction;
  readonly target?: string;
  readonly limit: number;
  readonly after?: AuditCursor;
}

export interface AuditPage {
  /** Newest first. */
  readonly entries: AuditEntry[];
  /** Where the next page starts, or null when this one holds the oldest match. */
  readonly next: AuditCursor | null;
}

export const AUDIT_LIMIT_DEFAULT = 50;
export const AUDIT_LIMIT_MAX = 1000;

const nextUlid = monotonicFactory();

/** `aud_` + a ULID of `now`: sortable by time, like the request ids. */
export function newAuditId(now: number): string {
  return 'aud_' + nextUlid(now);
}

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());

/**
 * What an admin can change of a key, as the admin API names it. Left out: the secret and its
 * hashes (never stored in the log), the id (the entry's target), times the change itself sets
 * (updated_at: the entry's ts) and last use (not an admin change). The prefix stays: it is
 * what `keys list` shows, and a rotation changes it.
 */
export function keyState(k: ApiKey): AuditState {
  return {
    name: k.name,
    team: k.team,
    prefix: k.prefix,
    rate: k.rate,
    credits: k.credits,
    endpoints: k.endpoints,
    strategies: k.strategies,
    expires_at: iso(k.expiresAt),
    cache_isolated: k.cacheIsolated,
    revoked_at: iso(k.revokedAt),
    previous_secret_expires_at: iso(k.previousExpiresAt),
  };
}

/** The entry of a key change: a creation shows the whole key, any other change only the fields that moved. */
export function keyChange(actor: string, action: AuditAction, before: ApiKey | null, after: ApiKey): NewAuditEntry {
  const b = before ? keyState(before) : null;
  const a = keyState(after);
  if (!b) return { actor, action, target: after.id, before: null, after: a };
  const changed = Object.keys(a).filter((f) => JSON.stringify(a[f]) !== JSON.stringify(b[f]));
  return { actor, action, target: after.id, before: pick(b, changed), after: pick(a, changed) };
}

function pick(s: AuditState, fields: readonly string[]): AuditState {
  return Object.fromEntries(fields.map((f) => [f, s[f]]));
}

/** The entry of a team change (its budget): the target is `team:<name>`; a new team has no before. */
export function teamChange(actor: string, name: string, before: { credits: string | null } | null, after: { credits: string | null }): NewAuditEntry {
  return { actor, action: 'team.set', target: `team:${name}`, before: before ? { credits: before.credits } : null, after: { credits: after.credits } };
}

/**
 * The entry of a team's deletion: what it had (its budget and its keys' ids), nothing after.
 * Keys it had moved elsewhere first are each a `key.update` of their team (keyTeamChange).
 */
export function teamDeletion(actor: string, name: string, before: { credits: string | null; keys: readonly string[] }): NewAuditEntry {
  return { actor, action: 'team.delete', target: `team:${name}`, before: { credits: before.credits, keys: [...before.keys] }, after: null };
}

/** A key moved from one team to another (or to none) by a team's deletion: the `key.update` keyChange would give. */
export function keyTeamChange(actor: string, keyId: string, from: string, to: string | null): NewAuditEntry {
  return { actor, action: 'key.update', target: keyId, before: { team: from }, after: { team: to } };
}

/** A purge's target, as `--target` / `target=` match it: `cache:all`, `cache:endpoint=…`, `cache:identity=…[,endpoint=…]`. */
export function purgeTarget(f: PurgeFilter): string {
  if (f.all) return 'cache:all';
  return 'cache:' + [f.identity && `identity=${f.identity}`, f.endpoint && `endpoint=${f.endpoint}`].filter(Boolean).join(',');
}

/** The entry of a purge: what it asked for (the target) and how many entries went. */
export function purgeChange(actor: string, filter: PurgeFilter, purged: number): NewAuditEntry {
  return { actor, action: 'cache.purge', target: purgeTarget(filter), before: null, after: { purged } };
}

/** Whether `actor` is `wanted` or one of its kind (`cli` matches `cli:alice`). */
export function actorMatches(actor: string, wanted: string): boolean {
  return actor === wanted || actor.startsWith(wanted + ':');
}

/** The cursor as the API hands it out: opaque to clients, `<ts>.<id>` in base64url. */
export function encodeCursor(c: AuditCursor): string {
  return Buffer.from(`${c.ts}.${c.id}`).toString('base64url');
}

export function decodeCursor(s: string): AuditCursor | null {
  const m = /^(\d{1,15})\.(aud_[0-9A-Z]{26})$/.exec(Buffer.from(s, 'base64url').toString('utf8'));
  return m ? { ts: Number(m[1]), id: m[2]! } : null;
}
