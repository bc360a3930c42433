import type { Pool, PoolClient } from 'pg';
import { keyTeamChange, teamChange, teamDeletion } from '../../domain/audit.js';
import type { Clock } from '../../domain/clock.js';
import type { Team, TeamDeletion, TeamKeysOnDelete } from '../../domain/teams.js';
import type { Teams } from '../ports.js';
import type { PgAudit } from './audit.js';
import { ChangeStamps } from '../change-stamps.js';
import { NOTIFY_SQL, stampPayload } from './change-feed.js';
import { inTransaction } from './pool.js';

type Queryable = Pool | PoolClient;

interface Row {
  name: string;
  credits: string | null;
  created_at: string;
  updated_at: string;
}

/** The rows of `teams`, and the names keys give that have none (a key's team needs no row until it gets a budget). */
const ALL = `SELECT name, credits, created_at, updated_at FROM teams
  UNION ALL SELECT owner, NULL, MIN(created_at), MIN(created_at) FROM api_keys
    WHERE owner IS NOT NULL AND owner NOT IN (SELECT name FROM teams) GROUP BY owner`;

/**
 * Teams in PostgreSQL. Key reads join their team's budget, so a change notifies `keys` in its
 * transaction: every replica forgets the keys it remembers (RememberedKeys) when it commits, and
 * the next request of the team's keys meets the new budget (within the feed's delay, < 2 s).
 */
export class PgTeams implements Teams {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
    private readonly audit: PgAudit | null = null,
    private readonly stamps: ChangeStamps = new ChangeStamps(),
  ) {}

  async list(): Promise<Team[]> {
    const r = await this.pool.query<Row>(`${ALL} ORDER BY name`);
    return r.rows.map(toTeam);
  }

  async get(name: string): Promise<Team | null> {
    const r = await this.pool.query<Row>(`SELECT * FROM (${ALL}) a WHERE name = $1`, [name]);
    return r.rows[0] ? toTeam(r.rows[0]) : null;
  }

  async set(name: string, credits: string | null, actor?: string): Promise<Team> {
    return inTransaction(this.pool, async (c) => {
      // Two admins setting one team at once take turns: each entry's `before` is what the other left.
      await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`tollgate-team:${name}`]);
      const found = await c.query<Row>(`SELECT * FROM (${ALL}) a WHERE name = $1`, [name]);
      const before = found.rows[0] ? toTeam(found.rows[0]) : null;
      if (before && before.credits === credits) return before;
      const now = this.clock.now();
      const r = await c.query<Row>(
        `INSERT INTO teams (name, credits, created_at, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (name) DO UPDATE SET credits = excluded.credits, updated_at = excluded.updated_at RETURNING *`,
        [name, credits, before?.createdAt ?? now, now],
      );
      await this.notifyKeys(c);
      if (actor !== undefined && this.audit) await this.audit.insert(c, teamChange(actor, name, before, { credits }));
      return toTeam(r.rows[0]!);
    });
  }

  async delete(name: string, keys: TeamKeysOnDelete, actor?: string): Promise<TeamDeletion> {
    const to = keys === 'refuse' ? null : keys.to;
    return inTransaction(this.pool, async (c) => {
      // The team the keys move to is locked too: without it, that team's own deletion (which saw
      // none of the moving keys, not yet committed) succeeded alongside this one, and the keys
      // landed in a team whose budget was gone. Locks in name order, so two deletions that move
      // keys into each other's team wait rather than deadlock.
      for (const locked of [...new Set([name, ...(to === null ? [] : [to])])].sort()) {
        await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`tollgate-team:${locked}`]);
      }
      const team = await this.getIn(c, name);
      if (!team) return { deleted: false, reason: 'not_found' };
      // Locked: a key moved by an admin meanwhile waits for this deletion, or is not among them.
      const ids = (await c.query<{ id: string }>('SELECT id FROM api_keys WHERE owner = $1 ORDER BY id COLLATE "C" FOR UPDATE', [name])).rows.map((r) => r.id);
      if (ids.length > 0 && keys === 'refuse') return { deleted: false, reason: 'has_keys', keys: ids.length };
      if (to !== null && (to === name || !(await this.getIn(c, to)))) return { deleted: false, reason: 'no_target' };
      if (ids.length > 0) await c.query('UPDATE api_keys SET owner = $1, updated_at = $2 WHERE owner = $3', [to, this.clock.now(), name]);
      await c.query('DELETE FROM teams WHERE name = $1', [name]);
      await this.notifyKeys(c);
      if (actor !== undefined && this.audit) {
        for (const id of ids) await this.audit.insert(c, keyTeamChange(actor, id, name, to));
        await this.audit.insert(c, teamDeletion(actor, name, { credits: team.credits, keys: ids }));
      }
      return { deleted: true, team, keys: ids };
    });
  }

  /** Inside the change's transaction: every replica reads its keys (and their teams' budgets) again. */
  private async notifyKeys(c: PoolClient): Promise<void> {
    await c.query(NOTIFY_SQL, ['keys']);
    await c.query(NOTIFY_SQL, [stampPayload(this.stamps.next('keys'))]);
  }

  private async getIn(c: Queryable, name: string): Promise<Team | null> {
    const r = await c.query<Row>(`SELECT * FROM (${ALL}) a WHERE name = $1`, [name]);
    return r.rows[0] ? toTeam(r.rows[0]) : null;
  }
}

function toTeam(r: Row): Team {
  return { name: r.name, credits: r.credits, createdAt: Number(r.created_at), updatedAt: Number(r.updated_at) };
}
