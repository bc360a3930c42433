import { formatBudgets, parseBudgets, remaining, type BudgetState } from '../domain/credits.js';
import type { ApiKey } from '../domain/keys.js';
import { newTeamName, teamName, type Team, type TeamDeletion } from '../domain/teams.js';
import type { Accounting } from '../gateway/accounting.js';
import type { Keys, Teams } from '../store/ports.js';
import { KeyInputError, keyView } from './keys.js';

/*
 * Teams for the CLI and the admin API (README "Teams"): one validation of names and budgets,
 * one view, so that `tollgate teams show` and GET /admin/teams/:name say the same.
 */

/** A team name from a path or an argument; a bad one is a KeyInputError on `name`. `rule`: newTeamName for a team set. */
export function parseTeamName(v: unknown, rule: (s: string) => string = teamName): string {
  if (typeof v !== 'string') throw new KeyInputError('name', 'must be a string');
  try {
    return rule(v);
  } catch (err) {
    throw new KeyInputError('name', (err as Error).message);
  }
}

/** `5000/month` (normalised), or null for absent, null or "none": no team budget. */
export function parseTeamCredits(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw new KeyInputError('credits', 'must be a string such as 5000/month, or null');
  const s = v.trim();
  if (s.toLowerCase() === 'none') return null;
  try {
    return formatBudgets(parseBudgets(s));
  } catch (err) {
    throw new KeyInputError('credits', (err as Error).message);
  }
}

/** Create a team or set its budget; audited as `team.set` by the store, in the change's transaction. */
export async function setTeam(teams: Teams, name: unknown, credits: unknown, actor: string): Promise<Team> {
  return teams.set(parseTeamName(name, newTeamName), parseTeamCredits(credits), actor);
}

/**
 * Delete a team (README "Teams"): refused while it has keys, unless they are moved to another
 * existing team (`reassign`) or out of any team (`unassign`); audited as `team.delete` by the
 * store. A bad option is a KeyInputError on `reassign` or `unassign`.
 */
export async function deleteTeam(teams: Teams, name: unknown, opts: { reassign?: unknown; unassign?: boolean }, actor: string): Promise<{ result: TeamDeletion; to: string | null }> {
  const team = parseTeamName(name);
  if (opts.reassign !== undefined && opts.unassign) throw new KeyInputError('reassign', 'give reassign or unassign, not both');
  if (opts.reassign === undefined) return { result: await teams.delete(team, opts.unassign ? { to: null } : 'refuse', actor), to: null };
  let to: string;
  try {
    to = parseTeamName(opts.reassign);
  } catch (err) {
    throw new KeyInputError('reassign', (err as Error).message);
  }
  if (to === team) throw new KeyInputError('reassign', 'must name another team than the one deleted');
  return { result: await teams.delete(team, { to }, actor), to };
}

/** What a refused deletion says, for the admin API and the CLI alike (`reassign` and `unassign` as each names them). */
export function deletionRefusal(name: string, d: Exclude<TeamDeletion, { deleted: true }>, reassign: string, unassign: string, target: string | null): string {
  if (d.reason === 'not_found') return `No team named '${name}'.`;
  if (d.reason === 'no_target') return `No team named '${target}' to move the keys to (create it first: it must exist).`;
  return `Team '${name}' still has ${d.keys} key${d.keys === 1 ? '' : 's'} (revoked ones count): move them to another team with ${reassign}, or out of any team with ${unassign}.`;
}

/** A deletion as the admin API and `teams delete --json` answer it. */
export const deletionView = (d: Extract<TeamDeletion, { deleted: true }>, to: string | null) => ({ deleted: d.team.name, credits: d.team.credits, moved_keys: d.keys, moved_to: to });

export function budgetsView(states: readonly BudgetState[]) {
  return states.map((s) => ({ limit: s.budget.limit, period: s.budget.period, used: s.used, reserved: s.reserved, remaining: remaining(s), reset_seconds: s.reset }));
}

const iso = (t: number) => new Date(t).toISOString();

/**
 * A key with what its budgets have used and have left (`GET /admin/keys/:id`, `keys show`):
 * `budgets` its own, `team_budgets` its team's, which its provider calls spend from too (empty
 * without a team or when the team has no budget).
 */
export async function keyWithBudgets(k: ApiKey, accounting: Accounting, now: number) {
  const [own, team] = await Promise.all([accounting.keyStates(k, now), k.team === null ? [] : accounting.teamStates(k.team, k.teamCredits, now)]);
  return { ...keyView(k, now), budgets: budgetsView(own), team_budgets: budgetsView(team) };
}

/** A team as listed: its budget with use per period, and how many keys it has. */
export async function teamView(t: Team, keys: readonly ApiKey[], accounting: Accounting, now: number) {
  return {
    name: t.name,
    credits: t.credits,
    created_at: iso(t.createdAt),
    updated_at: iso(t.updatedAt),
    budgets: budgetsView(await accounting.teamStates(t.name, t.credits, now)),
    key_count: keys.filter((k) => k.team === t.name).length,
  };
}

/** Every team (`GET /admin/teams`, `teams list`). */
export async function listTeams(teams: Teams, keys: Keys, accounting: Accounting, now: number) {
  const all = await keys.list();
  return Promise.all((await teams.list()).map((t) => teamView(t, all, accounting, now)));
}

/** One team with its keys (`GET /admin/teams/:name`, `teams show`); null when there is none of that name. */
export async function showTeam(teams: Teams, keys: Keys, accounting: Accounting, name: unknown, now: number) {
  const t = await teams.get(parseTeamName(name));
  if (!t) return null;
  const all = await keys.list();
  const own = all.filter((k) => k.team === t.name).map((k) => keyView(k, now));
  return { ...(await teamView(t, all, accounting, now)), keys: own.map((k) => ({ id: k.id, name: k.name, prefix: k.prefix, state: k.state, credits: k.credits })) };
}
