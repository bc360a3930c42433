import type { Pool, PoolClient } from 'pg';
import { newAuditId, type AuditEntry, type AuditPage, type AuditQuery, type NewAuditEntry } from '../../domain/audit.js';
import type { Clock } from '../../domain/clock.js';
import type { AuditLog } from '../ports.js';

interface Row {
  id: string;
  ts: string;
  actor: string;
  action: string;
  target: string;
  before: AuditEntry['before'];
  after: AuditEntry['after'];
}

/**
 * The audit log in PostgreSQL, shared by every replica and command: PgKeys calls `insert` on
 * the connection of the transaction that makes the change it records. Appended only.
 */
export class PgAudit implements AuditLog {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  /** Write an entry on `on` (a transaction's connection, or the pool for one of its own). */
  async insert(on: Pool | PoolClient, e: NewAuditEntry): Promise<AuditEntry> {
    const ts = this.clock.now();
    const entry: AuditEntry = { id: newAuditId(ts), ts, ...e };
    await on.query('INSERT INTO audit_log (id, ts, actor, action, target, before, after) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
      entry.id,
      ts,
      e.actor,
      e.action,
      e.target,
      json(e.before),
      json(e.after),
    ]);
    return entry;
  }

  append(e: NewAuditEntry): Promise<AuditEntry> {
    return this.insert(this.pool, e);
  }

  async list(q: AuditQuery): Promise<AuditPage> {
    const where: string[] = [];
    const params: unknown[] = [];
    const p = (v: unknown) => `$${params.push(v)}`;
    if (q.from !== undefined) where.push(`ts >= ${p(q.from)}`);
    if (q.to !== undefined) where.push(`ts < ${p(q.to)}`);
    if (q.action !== undefined) where.push(`action = ${p(q.action)}`);
    if (q.target !== undefined) where.push(`target = ${p(q.target)}`);
    // `cli` matches `cli` and `cli:<user>` (domain/audit.ts actorMatches), without LIKE's wildcards.
    if (q.actor !== undefined) where.push(`(actor = ${p(q.actor)} OR left(actor, ${p(q.actor.length + 1)}) = ${p(q.actor + ':')})`);
    if (q.after) where.push(`(ts, id) < (${p(q.after.ts)}, ${p(q.after.id)})`);
    const sql = `SELECT id, ts, actor, action, target, before, after FROM audit_log ${where.length ? 'WHERE ' + where.join(' AND ') : ''}
      ORDER BY ts DESC, id DESC LIMIT ${p(q.limit + 1)}`;
    const r = await this.pool.query<Row>(sql, params);
    const entries = r.rows.slice(0, q.limit).map(toEntry);
    const last = entries[entries.length - 1];
    return { entries, next: r.rows.length > q.limit && last ? { ts: last.ts, id: last.id } : null };
  }
}

/** jsonb parameters go as text: node-postgres would send a JS array as a PostgreSQL array. */
const json = (v: unknown): string | null => (v === null ? null : JSON.stringify(v));

function toEntry(r: Row): AuditEntry {
  return { id: r.id, ts: Number(r.ts), actor: r.actor, action: r.action as AuditEntry['action'], target: r.target, before: r.before, after: r.after };
}
