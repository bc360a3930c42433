import type { FastifyInstance } from 'fastify';
import { KeyInputError } from '../admin/keys.js';
import { tokenDigest } from '../domain/keys.js';
import { NOT_UTF8_QUERY, utf8Escapes } from '../domain/params.js';
import type { TrustedProxies } from '../domain/trusted-proxies.js';
import { isStorageError } from '../store/storage-errors.js';
import { registerAssets } from './assets.js';
import { errorPage, type DashboardDeps } from './context.js';
import { acceptForms, FormProblem, securityHeaders, seeOther } from './http.js';
import { SessionAuth } from './session.js';
import { registerSignIn, registerSignOut } from './sign-in.js';
import { registerKeys } from './keys.js';
import { registerTeams } from './teams.js';
import { registerCache } from './cache.js';
import { registerAudit } from './audit.js';
import { registerOverview } from './overview.js';
import { registerUsage } from './usage.js';
import { registerAlerts } from './alerts.js';

export type { DashboardDeps } from './context.js';

/**
 * The dashboard under /dashboard (README "Dashboard"): server-rendered pages whose forms work
 * without JavaScript (POST → 303 → GET), calling the admin API's functions directly. Like
 * /admin it exists only while `adminToken` is set (otherwise 404 ROUTE_NOT_FOUND). Every page
 * but sign-in needs a session; every POST of a session needs its CSRF token and this origin.
 */
export function registerDashboard(app: FastifyInstance, deps: DashboardDeps, trusted: TrustedProxies): void {
  const token = deps.config.adminToken;
  if (token === null) return;
  const digest = tokenDigest(token);
  const auth = new SessionAuth(deps.backend.sessions, digest, deps.config, deps.clock, trusted);

  void app.register(
    async (d) => {
      acceptForms(d);
      d.decorateRequest('dashboardSession', null);
      d.addHook('onRequest', async (_request, reply) => securityHeaders(reply));
      registerAssets(d);
      registerSignIn(d, deps, auth, digest);

      void d.register(async (signed) => {
        signed.addHook('preHandler', async (request, reply) => {
          const s = await auth.load(request);
          if (!s) return seeOther(reply, request.method === 'GET' ? '/dashboard/sign-in' : '/dashboard/sign-in?ended=1');
          request.dashboardSession = s;
          // The query parser keeps an escape that is not UTF-8 as its text (?actor=%E9ric filtered
          // for the literal "%E9ric", found nobody, answered 200): refused, as /admin refuses it.
          const q = request.url.indexOf('?');
          if (q >= 0 && !utf8Escapes(request.url.slice(q + 1))) return errorPage(request, reply, 400, NOT_UTF8_QUERY, 'INVALID_PARAMETER');
          if (request.method !== 'GET' && request.method !== 'HEAD' && !auth.csrfOk(request, s)) {
            return errorPage(request, reply, 403, 'The form was refused: it did not come from this dashboard page (a missing or stale CSRF token, or another site). Reload the page and try again.', 'CSRF_REJECTED');
          }
        });
        registerSignOut(signed, auth);
        registerOverview(signed, deps);
        registerKeys(signed, deps);
        registerTeams(signed, deps);
        registerUsage(signed, deps);
        registerCache(signed, deps);
        registerAudit(signed, deps);
        registerAlerts(signed, deps);
      });

      // An unknown page under /dashboard, signed in or not: an HTML page in the layout (with the
      // navigation when signed in), not /admin's JSON envelope. Registered here, after the
      // security-header hook, so that the hook runs for it too.
      d.setNotFoundHandler(async (request, reply) => {
        request.dashboardSession = await auth.load(request);
        return errorPage(request, reply, 404, 'There is no dashboard page at this address.', 'ROUTE_NOT_FOUND');
      });

      d.setErrorHandler(async (err: Error & { statusCode?: number }, request, reply) => {
        if (err instanceof KeyInputError) return errorPage(request, reply, 400, `${err.field}: ${err.message}.`, 'INVALID_PARAMETER');
        if (err instanceof FormProblem) return errorPage(request, reply, 400, `${err.message}.`, 'INVALID_PARAMETER');
        const status = err.statusCode ?? 500;
        if (status >= 400 && status < 500) return errorPage(request, reply, 400, 'The form could not be read.', 'INVALID_PARAMETER');
        if (isStorageError(err)) {
          request.log.warn({ err }, 'dashboard change not stored: the database cannot be written');
          reply.header('retry-after', '1');
          return errorPage(request, reply, 503, 'The change could not be stored: the database cannot be written right now. Try again shortly.', 'STORAGE_UNAVAILABLE');
        }
        request.log.error({ err }, 'dashboard error');
        return errorPage(request, reply, 500, 'Unexpected error.', 'INTERNAL_ERROR');
      });
    },
    { prefix: '/dashboard' },
  );
}
