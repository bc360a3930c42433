import type { Pool } from 'pg';
import type { DashboardSession } from '../../domain/sessions.js';
import type { Sessions } from '../ports.js';
import { inTransaction } from './pool.js';

interface Row {
  id_hash: string;
  created_at: string;
  expires_at: string;
}

/**
 * Dashboard sessions in PostgreSQL, read by every replica: a session made on one works on all,
 * and a sign-out (a delete) ends it on all at once, since nothing of it is remembered in memory.
 */
export class PgSessions implements Sessions {
  constructor(private readonly pool: Pool) {}

  async create(s: DashboardSession): Promise<void> {
    await inTransaction(this.pool, async (c) => {
      await c.query('DELETE FROM dashboard_sessions WHERE expires_at <= $1', [s.createdAt]);
      await c.query('INSERT INTO dashboard_sessions (id_hash, created_at, expires_at) VALUES ($1, $2, $3)', [s.idHash, s.createdAt, s.expiresAt]);
    });
  }

  async get(idHash: string, now: number): Promise<DashboardSession | null> {
    const r = await this.pool.query<Row>('SELECT * FROM dashboard_sessions WHERE id_hash = $1 AND expires_at > $2', [idHash, now]);
    const row = r.rows[0];
    return row ? { idHash: row.id_hash, createdAt: Number(row.created_at), expiresAt: Number(row.expires_at) } : null;
  }

  async revoke(idHash: string): Promise<boolean> {
    const r = await this.pool.query('DELETE FROM dashboard_sessions WHERE id_hash = $1', [idHash]);
    return (r.rowCount ?? 0) > 0;
  }
}
