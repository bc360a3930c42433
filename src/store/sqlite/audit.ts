import { newAuditId, type AuditEntry, type AuditPage, type AuditQuery, type NewAuditEntry } from '../../domain/audit.js';
import type { Clock } from '../../domain/clock.js';
import type { AuditLog } from '../ports.js';
import type { DB } from './db.js';

interface Row {
  id: string;
  ts: number;
  actor: string;
  action: string;
  target: string;
  before: string | null;
  after: string | null;
}

/**
 * The audit log in tollgate.db, where the keys are: KeyStore calls `insert` inside the
 * transaction of the change it records. Appended only; nothing here updates or deletes.
 */
export class AuditStore implements AuditLog {
  private readonly insertStmt;

  constructor(
    private readonly db: DB,
    private readonly clock: Clock,
  ) {
    this.insertStmt = db.prepare('INSERT INTO audit_log (id, ts, actor, action, target, before, after) VALUES (@id, @ts, @actor, @action, @target, @before, @after)');
  }

  /** Write an entry; inside the caller's transaction when there is one. */
  insert(e: NewAuditEntry): AuditEntry {
    const ts = this.clock.now();
    const entry: AuditEntry = { id: newAuditId(ts), ts, ...e };
    this.insertStmt.run({ ...entry, before: json(e.before), after: json(e.after) });
    return entry;
  }

  append(e: NewAuditEntry): AuditEntry {
    return this.db.transaction(() => this.insert(e)).immediate();
  }

  /** A handful of conditions on an indexed table of a few entries a day: built per call. */
  list(q: AuditQuery): AuditPage {
    const where: string[] = [];
    const p: Record<string, unknown> = { limit: q.limit + 1 };
    if (q.from !== undefined) (where.push('ts >= @from'), (p.from = q.from));
    if (q.to !== undefined) (where.push('ts < @to'), (p.to = q.to));
    if (q.action !== undefined) (where.push('action = @action'), (p.action = q.action));
    if (q.target !== undefined) (where.push('target = @target'), (p.target = q.target));
    if (q.actor !== undefined) {
      // `cli` matches `cli` and `cli:<user>` (domain/audit.ts actorMatches), without LIKE's wildcards.
      where.push('(actor = @actor OR substr(actor, 1, @kindLength) = @kind)');
      Object.assign(p, { actor: q.actor, kind: q.actor + ':', kindLength: q.actor.length + 1 });
    }
    if (q.after) (where.push('(ts < @afterTs OR (ts = @afterTs AND id < @afterId))'), Object.assign(p, { afterTs: q.after.ts, afterId: q.after.id }));
    const sql = `SELECT * FROM audit_log ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY ts DESC, id DESC LIMIT @limit`;
    const rows = this.db.prepare<[Record<string, unknown>], Row>(sql).all(p);
    const entries = rows.slice(0, q.limit).map(toEntry);
    const last = entries[entries.length - 1];
    return { entries, next: rows.length > q.limit && last ? { ts: last.ts, id: last.id } : null };
  }
}

const json = (v: unknown): string | null => (v === null ? null : JSON.stringify(v));

function toEntry(r: Row): AuditEntry {
  return {
    id: r.id,
    ts: r.ts,
    actor: r.actor,
    action: r.action as AuditEntry['action'],
    target: r.target,
    before: r.before === null ? null : (JSON.parse(r.before) as AuditEntry['before']),
    after: r.after === null ? null : (JSON.parse(r.after) as AuditEntry['after']),
  };
}
