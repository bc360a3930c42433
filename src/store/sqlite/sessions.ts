import type { DashboardSession } from '../../domain/sessions.js';
import type { Sessions } from '../ports.js';
import type { DB } from './db.js';

interface Row {
  id_hash: string;
  created_at: number;
  expires_at: number;
}

/**
 * Dashboard sessions in tollgate.db. A handful of rows, written at sign-in and sign-out only:
 * the writes go straight to the file (a sign-in waits for its row like an admin change does).
 */
export class SessionStore implements Sessions {
  private readonly insertStmt;
  private readonly pruneStmt;
  private readonly getStmt;
  private readonly deleteStmt;

  constructor(private readonly db: DB) {
    this.insertStmt = db.prepare('INSERT INTO dashboard_sessions (id_hash, created_at, expires_at) VALUES (?, ?, ?)');
    this.pruneStmt = db.prepare('DELETE FROM dashboard_sessions WHERE expires_at <= ?');
    this.getStmt = db.prepare<[string, number], Row>('SELECT * FROM dashboard_sessions WHERE id_hash = ? AND expires_at > ?');
    this.deleteStmt = db.prepare('DELETE FROM dashboard_sessions WHERE id_hash = ?');
  }

  create(s: DashboardSession): void {
    this.db.transaction(() => {
      this.pruneStmt.run(s.createdAt);
      this.insertStmt.run(s.idHash, s.createdAt, s.expiresAt);
    }).immediate();
  }

  get(idHash: string, now: number): DashboardSession | null {
    const r = this.getStmt.get(idHash, now);
    return r ? { idHash: r.id_hash, createdAt: r.created_at, expiresAt: r.expires_at } : null;
  }

  revoke(idHash: string): boolean {
    return this.deleteStmt.run(idHash).changes > 0;
  }
}
