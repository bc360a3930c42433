import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { KeyInputError } from '../admin/keys.js';
import { deleteTeam, deletionRefusal, listTeams, setTeam, showTeam } from '../admin/teams.js';
import { withReached } from './alerts.js';
import { errorPage, frameOf, noticeOf, sessionOf, show, type DashboardDeps } from './context.js';
import { field, formOf, seeOther } from './http.js';

/** The choice the deletion's form offers for a team's keys, as its radio buttons name it (and its refusal quotes it). */
const REASSIGN = '“Move them to another team”';
const UNASSIGN = '“Take them out of any team”';

/**
 * Teams: their budgets and use, each team's keys, setting a team's budget, and deleting a team
 * after a confirmation that says where its keys go (admin/teams.ts, as the admin API and the CLI).
 */
export function registerTeams(app: FastifyInstance, deps: DashboardDeps): void {
  const { teams, keys } = deps.backend;
  const now = () => deps.clock.now();
  // Each budget with the threshold it has reached this period, for its badge (alerts.ts).
  const reached = <B extends { used: number; limit: number }>(bs: readonly B[]) => withReached(bs, deps.config.notifications.thresholds);

  const list = async (request: FastifyRequest, reply: FastifyReply, status: number, error: string | null, typed: { name: string; credits: string }) => {
    const rows = (await listTeams(teams, keys, deps.accounting, now())).map((t) => ({ ...t, budgets: reached(t.budgets) }));
    const notice = status === 200 ? noticeOf(request, { deleted: 'Team deleted.' }) : null;
    return show(request, reply, 'teams', frameOf(request, 'Teams', 'teams', { error, notice }), { rows, typed }, status);
  };

  /** The team of that name with its keys, or null (none, or a name no team can have). */
  const find = async (name: string) => {
    try {
      return await showTeam(teams, keys, deps.accounting, name, now());
    } catch (err) {
      if (err instanceof KeyInputError) return null;
      throw err;
    }
  };
  const missing = (request: FastifyRequest<{ Params: { name: string } }>, reply: FastifyReply) =>
    errorPage(request, reply, 404, `No team named '${request.params.name}'.`, 'NOT_FOUND', '/dashboard/teams');

  /** The deletion's confirmation: the team, its keys, and (when it has any) where they should go. */
  const confirm = async (request: FastifyRequest<{ Params: { name: string } }>, reply: FastifyReply, status: number, error: string | null, typed: { keys: string; reassign: string }) => {
    const team = await find(request.params.name);
    if (!team) return missing(request, reply);
    const others = (await teams.list()).map((t) => t.name).filter((n) => n !== team.name);
    return show(request, reply, 'team-delete', frameOf(request, `Delete team ${team.name}?`, 'teams', { error }), { team, others, typed }, status);
  };

  app.get('/teams', async (request, reply) => list(request, reply, 200, null, { name: '', credits: '' }));

  app.get<{ Params: { name: string } }>('/teams/:name', async (request, reply) => {
    const team = await find(request.params.name);
    if (!team) return missing(request, reply);
    const notice = noticeOf(request, { set: 'Budget saved.' });
    return show(request, reply, 'team', frameOf(request, `Team ${team.name}`, 'teams', { notice }), { team: { ...team, budgets: reached(team.budgets) } });
  });

  // Creates the team or replaces its budget; an empty budget (or "none") means none.
  app.post('/teams', async (request, reply) => {
    const form = formOf(request);
    const typed = { name: field(form, 'name') ?? '', credits: field(form, 'credits') ?? '' };
    try {
      const t = await setTeam(teams, typed.name, typed.credits === '' ? null : typed.credits, sessionOf(request).actor);
      return seeOther(reply, `/dashboard/teams/${encodeURIComponent(t.name)}?done=set`);
    } catch (err) {
      if (err instanceof KeyInputError) return list(request, reply, 400, `${err.field === 'name' ? 'Team name' : 'Budget'}: ${err.message}.`.replace(/\.\.$/, '.'), typed);
      throw err;
    }
  });

  app.get<{ Params: { name: string } }>('/teams/:name/delete', async (request, reply) => confirm(request, reply, 200, null, { keys: '', reassign: '' }));

  // `keys` says where the team's keys go (reassign, with `reassign` the team, or unassign); a team
  // without keys needs neither. Refused like DELETE /admin/teams/:name, with the form again.
  app.post<{ Params: { name: string } }>('/teams/:name/delete', async (request, reply) => {
    const form = formOf(request);
    const typed = { keys: field(form, 'keys') ?? '', reassign: field(form, 'reassign') ?? '' };
    // A value the radio buttons never send was read as no choice: a team without keys was deleted on it.
    if (!['', 'reassign', 'unassign'].includes(typed.keys)) return confirm(request, reply, 400, `Where the keys go: choose ${REASSIGN} or ${UNASSIGN}.`, { ...typed, keys: '' });
    const opts = typed.keys === 'reassign' ? { reassign: typed.reassign } : typed.keys === 'unassign' ? { unassign: true } : {};
    try {
      const { result: d, to } = await deleteTeam(teams, request.params.name, opts, sessionOf(request).actor);
      if (d.deleted) return seeOther(reply, '/dashboard/teams?done=deleted');
      if (d.reason === 'not_found') return missing(request, reply);
      if (d.reason === 'has_keys') {
        const keysText = `${d.keys} key${d.keys === 1 ? '' : 's'}`;
        return confirm(request, reply, 409, `Team '${request.params.name}' still has ${keysText} (revoked ones count): choose where they go, to another team or out of any team.`, typed);
      }
      return confirm(request, reply, 400, deletionRefusal(request.params.name, d, REASSIGN, UNASSIGN, to), typed);
    } catch (err) {
      if (!(err instanceof KeyInputError)) throw err;
      const message = err.field === 'reassign' && typed.reassign === '' ? 'Choose the team to move the keys to.' : `${err.field === 'reassign' ? 'Team to move them to' : err.field}: ${err.message}.`;
      return confirm(request, reply, 400, message.replace(/\.\.$/, '.'), typed);
    }
  });
}
