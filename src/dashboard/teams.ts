import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { KeyInputError } from '../admin/keys.js';
import { listTeams, setTeam, showTeam } from '../admin/teams.js';
import { withReached } from './alerts.js';
import { errorPage, frameOf, noticeOf, sessionOf, show, type DashboardDeps } from './context.js';
import { field, formOf, seeOther } from './http.js';

/** Teams: their budgets and use, each team's keys, and setting a team's budget (admin/teams.ts). */
export function registerTeams(app: FastifyInstance, deps: DashboardDeps): void {
  const { teams, keys } = deps.backend;
  const now = () => deps.clock.now();
  // Each budget with the threshold it has reached this period, for its badge (alerts.ts).
  const reached = <B extends { used: number; limit: number }>(bs: readonly B[]) => withReached(bs, deps.config.notifications.thresholds);

  const list = async (request: FastifyRequest, reply: FastifyReply, status: number, error: string | null, typed: { name: string; credits: string }) => {
    const rows = (await listTeams(teams, keys, deps.accounting, now())).map((t) => ({ ...t, budgets: reached(t.budgets) }));
    return show(request, reply, 'teams', frameOf(request, 'Teams', 'teams', { error }), { rows, typed }, status);
  };

  app.get('/teams', async (request, reply) => list(request, reply, 200, null, { name: '', credits: '' }));

  app.get<{ Params: { name: string } }>('/teams/:name', async (request, reply) => {
    let team;
    try {
      team = await showTeam(teams, keys, deps.accounting, request.params.name, now());
    } catch (err) {
      if (!(err instanceof KeyInputError)) throw err;
    }
    if (!team) return errorPage(request, reply, 404, `No team named '${request.params.name}'.`, 'NOT_FOUND', '/dashboard/teams');
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
}
