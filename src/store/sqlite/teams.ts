import { keyTeamChange, teamChange, teamDeletion } from '../../domain/audit.js';
import type { Clock } from '../../domain/clock.js';
import type { Team, TeamDeletion, TeamKeysOnDelete } from '../../domain/teams.js';
import type { Teams } from '../ports.js';
import type { AuditStore } from './audit.js';
import type { DB } from './db.js';
import { keysChanged } from './keys.js';

interface Row {
  name: string;
  credits: string | null;
  created_at: number;
  updated_at: number;
}

/**
 * Teams: the rows of `teams`, and the names keys give that have none (a key's team needs no
 * row until it gets a budget; such a team is listed without one, created when its first key was).
 */
const ALL = `SELECT name, credits, created_at, updated_at FROM teams
  UNION ALL SELECT owner, NULL, MIN(created_at), MIN(created_at) FROM api_keys
    WHERE owner IS NOT NULL AND owner NOT IN (SELECT name FROM teams) GROUP BY owner`;

/**
 * Teams in tollgate.db, beside the keys whose reads join their budgets: a change drops the keys
 * every process remembers (this connection's KeyStores through keysChanged, the others through
 * data_version), so the next request of any of the team's keys meets the new budget.
 */
export class TeamStore implements Teams {
  private readonly listStmt;
  private readonly getStmt;
  private readonly upsertStmt;
  private readonly keysOfStmt;
  private readonly moveStmt;
  private readonly deleteStmt;

  constructor(
    private readonly db: DB,
    private readonly clock: Clock,
    private readonly audit: AuditStore | null = null,
  ) {
    this.listStmt = db.prepare<[], Row>(`${ALL} ORDER BY name`);
    this.getStmt = db.prepare<[string], Row>(`SELECT * FROM (${ALL}) WHERE name = ?`);
    this.upsertStmt = db.prepare(`INSERT INTO teams (name, credits, created_at, updated_at) VALUES (@name, @credits, @created, @now)
      ON CONFLICT (name) DO UPDATE SET credits = excluded.credits, updated_at = excluded.updated_at`);
    this.keysOfStmt = db.prepare<[string], string>('SELECT id FROM api_keys WHERE owner = ? ORDER BY id').pluck();
    this.moveStmt = db.prepare('UPDATE api_keys SET owner = ?, updated_at = ? WHERE owner = ?');
    this.deleteStmt = db.prepare('DELETE FROM teams WHERE name = ?');
  }

  list(): Team[] {
    return this.listStmt.all().map(toTeam);
  }

  get(name: string): Team | null {
    const r = this.getStmt.get(name);
    return r ? toTeam(r) : null;
  }

  set(name: string, credits: string | null, actor?: string): Team {
    const run = (): Team => {
      const before = this.get(name);
      if (before && before.credits === credits) return before;
      const now = this.clock.now();
      this.upsertStmt.run({ name, credits, created: before?.createdAt ?? now, now });
      if (actor !== undefined && this.audit) this.audit.insert(teamChange(actor, name, before, { credits }));
      return this.get(name)!;
    };
    try {
      return this.db.transaction(run).immediate();
    } finally {
      keysChanged(this.db);
    }
  }

  /** Refusals read and decide inside the write transaction, so nothing can slip between the check and the deletion. */
  delete(name: string, keys: TeamKeysOnDelete, actor?: string): TeamDeletion {
    const run = (): TeamDeletion => {
      const team = this.get(name);
      if (!team) return { deleted: false, reason: 'not_found' };
      const ids = this.keysOfStmt.all(name);
      if (ids.length > 0 && keys === 'refuse') return { deleted: false, reason: 'has_keys', keys: ids.length };
      const to = keys === 'refuse' ? null : keys.to;
      if (to !== null && (to === name || !this.get(to))) return { deleted: false, reason: 'no_target' };
      if (ids.length > 0) this.moveStmt.run(to, this.clock.now(), name);
      this.deleteStmt.run(name);
      if (actor !== undefined && this.audit) {
        for (const id of ids) this.audit.insert(keyTeamChange(actor, id, name, to));
        this.audit.insert(teamDeletion(actor, name, { credits: team.credits, keys: ids }));
      }
      return { deleted: true, team, keys: ids };
    };
    try {
      return this.db.transaction(run).immediate();
    } finally {
      keysChanged(this.db);
    }
  }
}

function toTeam(r: Row): Team {
  return { name: r.name, credits: r.credits, createdAt: r.created_at, updatedAt: r.updated_at };
}
