import type { Pool, PoolClient } from 'pg';
import { keyChange, type AuditAction } from '../../domain/audit.js';
import type { Clock } from '../../domain/clock.js';
import { hashSecret, newKeyId, newSecret, PREFIX_CHARS, type ApiKey, type FoundKey, type KeyPatch, type NewKey } from '../../domain/keys.js';
import type { Keys } from '../ports.js';
import type { PgAudit } from './audit.js';
import { ChangeStamps } from '../change-stamps.js';
import { CHANGES_CHANNEL, stampPayload } from './change-feed.js';
import { inTransaction } from './pool.js';
import { API_KEYS, chosenInKeyOrder } from './row-locks.js';

interface Row {
  id: string;
  name: string;
  /** The key's team (the column predates teams). */
  owner: string | null;
  /** The team's budget: joined by the reads (SELECT_KEYS), absent from a write's RETURNING. */
  team_credits?: string | null;
  prefix: string;
  secret_hash: string;
  created_at: string;
  updated_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  rate: string | null;
  credits: string | null;
  endpoints: string[] | null;
  strategies: string[] | null;
  cache_isolated: boolean;
  prev_expires_at: string | null;
}

const COLUMNS = 'id, name, owner, prefix, secret_hash, created_at, updated_at, expires_at, revoked_at, last_used_at, rate, credits, endpoints, strategies, cache_isolated, prev_expires_at';

/** Keys with their team's budget (ApiKey.teamCredits): `${SELECT_KEYS} WHERE …` over `k`. */
const SELECT_KEYS = `SELECT ${COLUMNS.split(', ').map((c) => `k.${c}`).join(', ')}, t.credits AS team_credits FROM api_keys k LEFT JOIN teams t ON t.name = k.owner`;

/**
 * API keys in PostgreSQL, shared by every replica. Every call reads the table; a replica
 * remembers what it found in memory (shared/remembered-keys.ts) and forgets it when the
 * NOTIFY every write sends arrives. A write with an actor appends its audit entry in the
 * same transaction (the NOTIFY goes at its commit).
 */
export class PgKeys implements Keys {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
    private readonly audit: PgAudit | null = null,
    private readonly stamps: ChangeStamps = new ChangeStamps(),
  ) {}

  async findBySecret(secret: string): Promise<FoundKey | null> {
    return this.findByHash(hashSecret(secret));
  }

  /** The key whose current or previous secret hashes to `hash`. */
  async findByHash(hash: string): Promise<FoundKey | null> {
    const r = await this.pool.query<Row>(`${SELECT_KEYS} WHERE k.secret_hash = $1 OR k.prev_secret_hash = $1`, [hash]);
    const row = r.rows[0];
    return row ? { key: toKey(row), previous: row.secret_hash !== hash } : null;
  }

  async get(id: string): Promise<ApiKey | null> {
    const r = await this.pool.query<Row>(`${SELECT_KEYS} WHERE k.id = $1`, [id]);
    return r.rows[0] ? toKey(r.rows[0]) : null;
  }

  async list(): Promise<ApiKey[]> {
    const r = await this.pool.query<Row>(`${SELECT_KEYS} ORDER BY k.created_at, k.id`);
    return r.rows.map(toKey);
  }

  async create(input: NewKey, actor?: string): Promise<{ key: ApiKey; secret: string }> {
    const secret = newSecret();
    const now = this.clock.now();
    const r = await this.change(
      actor,
      'key.create',
      `INSERT INTO api_keys (id, name, owner, prefix, secret_hash, created_at, updated_at, expires_at, rate, credits, endpoints, strategies, cache_isolated)
       VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8, $9, $10, $11, $12) RETURNING ${COLUMNS}`,
      [
        newKeyId(),
        input.name,
        input.team ?? null,
        secret.slice(0, PREFIX_CHARS),
        hashSecret(secret),
        now,
        input.expiresAt ?? null,
        input.rate ?? null,
        input.credits ?? null,
        list(input.endpoints ?? null),
        list(input.strategies ?? null),
        input.cacheIsolated ?? false,
      ],
    );
    return { key: toKey(r[0]!), secret };
  }

  async update(id: string, patch: KeyPatch, actor?: string): Promise<ApiKey | null> {
    // Only the fields given are set, in one statement: two admins changing different fields
    // of one key at once through different replicas both keep their change.
    const params: unknown[] = [id];
    const sets: string[] = [];
    const set = (column: string, v: unknown) => {
      params.push(v);
      sets.push(`${column} = $${params.length}`);
    };
    if (patch.name !== undefined) set('name', patch.name);
    if (patch.team !== undefined) set('owner', patch.team);
    if (patch.expiresAt !== undefined) set('expires_at', patch.expiresAt);
    if (patch.rate !== undefined) set('rate', patch.rate);
    if (patch.credits !== undefined) set('credits', patch.credits);
    if (patch.endpoints !== undefined) set('endpoints', list(patch.endpoints));
    if (patch.strategies !== undefined) set('strategies', list(patch.strategies));
    if (patch.cacheIsolated !== undefined) set('cache_isolated', patch.cacheIsolated);
    set('updated_at', this.clock.now());
    const r = await this.change(actor, 'key.update', `UPDATE api_keys SET ${sets.join(', ')} WHERE id = $1 RETURNING ${COLUMNS}`, params);
    return r[0] ? toKey(r[0]) : null;
  }

  async rotate(id: string, overlapMs: number, actor?: string): Promise<{ key: ApiKey; secret: string } | null> {
    const secret = newSecret();
    const now = this.clock.now();
    const r = await this.change(
      actor,
      'key.rotate',
      `UPDATE api_keys SET prev_secret_hash = secret_hash, prev_expires_at = $2, secret_hash = $3, prefix = $4, updated_at = $5
       WHERE id = $1 AND revoked_at IS NULL RETURNING ${COLUMNS}`,
      [id, now + overlapMs, hashSecret(secret), secret.slice(0, PREFIX_CHARS), now],
    );
    return r[0] ? { key: toKey(r[0]), secret } : null;
  }

  async revoke(id: string, actor?: string): Promise<boolean> {
    const now = this.clock.now();
    const r = await this.change(actor, 'key.revoke', `UPDATE api_keys SET revoked_at = $2, updated_at = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING ${COLUMNS}`, [id, now]);
    return r.length > 0;
  }

  /** Last-used times of many keys in one statement (the sink of store/last-used.ts's batches). */
  async touchAll(lastUsed: ReadonlyMap<string, number>): Promise<void> {
    // Locked in id order (row-locks.ts): replicas touching the same keys never deadlock.
    await this.pool.query(
      `UPDATE api_keys k SET last_used_at = t.at FROM unnest($1::text[], $2::bigint[]) AS t(id, at) WHERE k.id = t.id AND k.${chosenInKeyOrder(API_KEYS, 'id = ANY ($1)')}`,
      [[...lastUsed.keys()], [...lastUsed.values()]],
    );
  }

  /**
   * The writing statement of key `params[0]`, with its audit entry when there is an actor: the
   * key as it was read under a row lock, the statement, the entry, in one transaction.
   */
  private async change(actor: string | undefined, action: AuditAction, sql: string, params: unknown[]): Promise<Row[]> {
    const audit = this.audit;
    if (actor === undefined || !audit) return this.writing(this.pool, sql, params);
    return inTransaction(this.pool, async (c) => {
      const before = action === 'key.create' ? [] : (await c.query<Row>(`SELECT ${COLUMNS} FROM api_keys WHERE id = $1 FOR UPDATE`, [params[0]])).rows;
      const rows = await this.writing(c, sql, params);
      if (rows[0]) await audit.insert(c, keyChange(actor, action, before[0] ? toKey(before[0]) : null, toKey(rows[0])));
      return rows;
    });
  }

  /**
   * A writing statement whose rows, when there are any, notify every replica (PgChangeFeed) in
   * the same statement: the notification is sent exactly when the change commits. It names the
   * key (`keys:<id>`), so that replicas forget that key alone, not every key they remember; a
   * replica of an earlier version reads it as `keys` and forgets them all, as it always did.
   */
  private async writing(on: Pool | PoolClient, sql: string, params: unknown[]): Promise<Row[]> {
    const stamp = stampPayload(this.stamps.next('keys'));
    const r = await on.query<Row>(
      `WITH w AS (${sql}) SELECT w.*, pg_notify('${CHANGES_CHANNEL}', 'keys:' || w.id) AS notified, pg_notify('${CHANGES_CHANNEL}', $${params.length + 1}) AS stamped FROM w`,
      [...params, stamp],
    );
    return r.rows;
  }
}

const list = (v: readonly string[] | null): string | null => (v ? JSON.stringify(v) : null);
const num = (v: string | null): number | null => (v === null ? null : Number(v));

function toKey(r: Row): ApiKey {
  return {
    id: r.id,
    name: r.name,
    team: r.owner,
    teamCredits: r.team_credits ?? null,
    prefix: r.prefix,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    expiresAt: num(r.expires_at),
    revokedAt: num(r.revoked_at),
    lastUsedAt: num(r.last_used_at),
    rate: r.rate,
    credits: r.credits,
    endpoints: r.endpoints,
    strategies: r.strategies,
    cacheIsolated: r.cache_isolated,
    previousExpiresAt: num(r.prev_expires_at),
  };
}
