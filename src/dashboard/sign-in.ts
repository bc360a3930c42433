import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { tokenDigest } from '../domain/keys.js';
import { crossSite } from '../domain/sessions.js';
import { errorPage, sessionOf, type DashboardDeps } from './context.js';
import { field, formOf, seeOther } from './http.js';
import { page } from './render.js';
import type { SessionAuth } from './session.js';

const hours = (ms: number) => (ms % 3_600_000 === 0 ? `${ms / 3_600_000} hours` : `${Math.round(ms / 60_000)} minutes`);

/**
 * Sign-in with the admin token, counted against /admin's own failed-token limiter (a wrong
 * token here is a guess like a wrong bearer token there), and sign-out.
 */
export function registerSignIn(app: FastifyInstance, deps: DashboardDeps, auth: SessionAuth, adminTokenDigest: Buffer): void {
  const form = (reply: FastifyReply, status: number, error: string | null) =>
    page(reply, status, 'sign-in', { title: 'Sign in', nav: null, csrf: null, error }, { ttl: hours(deps.config.dashboard.sessionTtlMs) });

  app.get('/sign-in', async (request, reply) => {
    if (await auth.load(request)) return seeOther(reply, '/dashboard');
    const ended = (request.query as Record<string, unknown>).ended !== undefined;
    return form(reply, 200, ended ? 'Your session has ended; sign in again.' : null);
  });

  app.post('/sign-in', async (request, reply) => {
    // A forged sign-in would put the victim's browser in the attacker's session.
    if (crossSite(request.headers)) return errorPage(request, reply, 403, 'Sign-in must come from the dashboard\'s own page.', 'CSRF_REJECTED', '/dashboard/sign-in');
    const now = deps.clock.now();
    const ip = deps.admission.adminState(request.clientIp, now);
    if (!ip.allowed) {
      reply.headers({ ...ip.headers, 'retry-after': String(ip.retryAfter) });
      return form(reply, 429, `Too many failed sign-ins from this address; try again in ${ip.retryAfter} seconds.`);
    }
    const given = field(formOf(request), 'token') ?? '';
    if (given === '') return form(reply, 400, 'Enter the admin token.');
    if (!timingSafeEqual(tokenDigest(given), adminTokenDigest)) {
      deps.admission.countAdminFailure(request.clientIp, now);
      return form(reply, 401, 'That is not the admin token.');
    }
    await auth.start(request, reply);
    return seeOther(reply, '/dashboard');
  });
}

/** Sign-out: a POST with the session's CSRF token (checked before the handler, index.ts). */
export function registerSignOut(app: FastifyInstance, auth: SessionAuth): void {
  app.post('/sign-out', async (request, reply) => {
    await auth.end(request, reply, sessionOf(request));
    return seeOther(reply, '/dashboard/sign-in');
  });
}
