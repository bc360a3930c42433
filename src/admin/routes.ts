import type { FastifyInstance } from 'fastify';
import { failure } from '../domain/errors.js';
import { authRateLimited } from '../gateway/admission.js';
import { purgeFilter } from '../domain/purge-filter.js';
import { NOT_UTF8_QUERY, utf8Escapes } from '../domain/params.js';
import type { AdminDeps } from './deps.js';
import { bodyOf, onlyParams, READS_QUERY, readsQuery, Refusal, send, sendFailure, utf8JsonBodies } from './reply.js';
import { createKey, KeyInputError, keyView, rotateKey, updateKey, type KeyInput } from './keys.js';
import { registerUsageRoutes } from './usage-routes.js';
import { budgetsView, deleteTeam, deletionRefusal, deletionView, keyWithBudgets, listTeams, setTeam, showTeam } from './teams.js';
import { cacheStatsView } from './cache.js';
import { isStorageError } from '../store/storage-errors.js';
import { BODY_LIMIT_BYTES } from '../http/edge.js';
import { bearerMatches, tokenDigest } from '../domain/keys.js';
import { purgeChange } from '../domain/audit.js';
import { auditPageView, auditQuery, isAuditInputError } from './audit.js';
import { crossSite, sessionCookie } from '../domain/sessions.js';
import { isNotificationsInputError, notificationsQuery, notificationsView } from './notifications.js';

export type { AdminDeps } from './deps.js';

/** `owner`: the deprecated name of `team`, accepted on input until the next release (README "Teams"). */
const NO_FIELDS: ReadonlySet<string> = new Set();
const KEY_FIELDS = new Set(['name', 'team', 'owner', 'rate', 'credits', 'endpoints', 'strategies', 'expires_at', 'cache_isolated']);

/**
 * The admin API under /admin (Bearer admin token). Disabled — not registered, so /admin/*
 * answers 404 ROUTE_NOT_FOUND — while `adminToken` is null: an unset token must not be a
 * guessable one. Failed token checks count against /admin's own per-address limiter.
 */
export function registerAdmin(app: FastifyInstance, deps: AdminDeps): void {
  const token = deps.config.adminToken;
  if (token === null) return;
  const expected = tokenDigest(token);

  void app.register(
    async (admin) => {
      utf8JsonBodies(admin);
      admin.addHook('onRequest', async (request, reply) => {
        // /admin never takes the dashboard's cookie (only the bearer token), and a page of
        // another site that makes a signed-in browser call it is refused outright (README "Dashboard").
        if (sessionCookie(request.headers.cookie) !== null && crossSite(request.headers)) return sendFailure(reply, failure('CSRF_REJECTED'));
        const now = deps.clock.now();
        // Unlike a client key, an exhausted address is refused even with the right token: admin
        // tokens are operator-chosen (16+ characters) and may be guessable, so guesses are capped.
        // The counters are /admin's own, and the address is one the client cannot choose.
        const ip = deps.admission.adminState(request.clientIp, now);
        if (!ip.allowed) return sendFailure(reply, authRateLimited(ip.retryAfter), ip.headers);
        if (!bearerMatches(request.headers.authorization, expected)) {
          const headers = deps.admission.countAdminFailure(request.clientIp, now);
          return sendFailure(reply, failure('ADMIN_UNAUTHORIZED'), { ...headers, 'www-authenticate': 'Bearer realm="tollgate-admin"' });
        }
        // The query parser keeps an escape that is not UTF-8 as its text: ?reassign=%E9quipe (Latin-1
        // "équipe") named the team "%E9quipe", and an audit filter matched nobody, answered 200.
        const q = request.url.indexOf('?');
        if (q >= 0 && !utf8Escapes(request.url.slice(q + 1))) return sendFailure(reply, failure('INVALID_PARAMETER', NOT_UTF8_QUERY));
      });

      // A query parameter a route does not read would be dropped, the call answered as if it applied (reply.ts READS_QUERY).
      admin.addHook('preHandler', async (request) => {
        if (!readsQuery(request)) onlyParams(request.query as Record<string, unknown>, []);
      });

      admin.setErrorHandler(async (err: unknown, request, reply) => {
        if (err instanceof Refusal) return sendFailure(reply, err.f);
        if (err instanceof KeyInputError) return sendFailure(reply, failure('INVALID_PARAMETER', `${err.field}: ${err.message}.`.replace(/\.\.$/, '.')));
        const e = err as { statusCode?: number };
        // Said as such: the JSON object's own refusal below would send the operator looking for a syntax error.
        if (e.statusCode === 413) return sendFailure(reply, failure('INVALID_PARAMETER', `The request body is larger than ${BODY_LIMIT_BYTES / 1024} KiB.`));
        if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
          return sendFailure(reply, failure('INVALID_PARAMETER', 'The request body must be a JSON object (Content-Type: application/json).'));
        }
        // A database another process holds, or a full disk: the operator's problem to retry, not a bug.
        if (isStorageError(err)) {
          request.log.warn({ err }, 'admin change not stored: the database cannot be written');
          return sendFailure(reply, failure('STORAGE_UNAVAILABLE', 'The change could not be stored: the database cannot be written right now.', { 'retry-after': '1' }));
        }
        request.log.error({ err }, 'admin error');
        return sendFailure(reply, failure('INTERNAL_ERROR'));
      });

      const { keys, teams, cache, audit } = deps.backend;
      // Who every change made here is by, in the audit log: the token's label (adminTokenLabel).
      const actor = deps.config.adminTokenLabel;
      const now = () => deps.clock.now();
      const mustGet = async (id: string) => {
        const k = await keys.get(id);
        if (!k) throw new Refusal(failure('NOT_FOUND', `No key with id ${id}.`));
        return k;
      };

      admin.post('/keys', async (request, reply) => {
        const { key, secret } = await createKey(keys, deps.config.keys.defaults, bodyOf(request, KEY_FIELDS) as KeyInput, actor);
        return send(reply, 201, { id: key.id, key: secret, api_key: keyView(key, now()) });
      });

      admin.get('/keys', async (_request, reply) => send(reply, 200, { keys: (await keys.list()).map((k) => keyView(k, now())) }));

      admin.get<{ Params: { id: string } }>('/keys/:id', async (request, reply) => {
        return send(reply, 200, await keyWithBudgets(await mustGet(request.params.id), deps.accounting, now()));
      });

      admin.patch<{ Params: { id: string } }>('/keys/:id', async (request, reply) => {
        const k = await updateKey(keys, request.params.id, bodyOf(request, KEY_FIELDS) as KeyInput, actor);
        if (!k) throw new Refusal(failure('NOT_FOUND', `No key with id ${request.params.id}.`));
        return send(reply, 200, keyView(k, now()));
      });

      admin.post<{ Params: { id: string } }>('/keys/:id/revoke', async (request, reply) => {
        // It reads no field, and one sent (a `reason`) must not be dropped while the key is revoked.
        bodyOf(request, NO_FIELDS);
        await mustGet(request.params.id);
        await keys.revoke(request.params.id, actor);
        return send(reply, 200, keyView(await mustGet(request.params.id), now()));
      });

      admin.post<{ Params: { id: string } }>('/keys/:id/rotate', async (request, reply) => {
        const { overlap } = bodyOf(request, new Set(['overlap']));
        const r = await rotateKey(keys, request.params.id, overlap, actor);
        if (!r.ok && r.reason === 'not_found') throw new Refusal(failure('NOT_FOUND', `No key with id ${request.params.id}.`));
        if (!r.ok) throw new Refusal(failure('CONFLICT', `Key ${request.params.id} is revoked; create a new key instead.`));
        return send(reply, 200, { id: r.key.id, key: r.secret, api_key: keyView(r.key, now()) });
      });

      admin.get('/teams', async (_request, reply) => send(reply, 200, { teams: await listTeams(teams, keys, deps.accounting, now()) }));

      const mustShow = async (name: string) => {
        const t = await showTeam(teams, keys, deps.accounting, name, now());
        if (!t) throw new Refusal(failure('NOT_FOUND', `No team named '${name}'.`));
        return t;
      };

      admin.get<{ Params: { name: string } }>('/teams/:name', async (request, reply) => send(reply, 200, await mustShow(request.params.name)));

      // Creates the team or replaces its budget: `{"credits": "5000/month"}`; null, "none" or no field: none.
      admin.put<{ Params: { name: string } }>('/teams/:name', async (request, reply) => {
        const { credits } = bodyOf(request, new Set(['credits']));
        const t = await setTeam(teams, request.params.name, credits, actor);
        return send(reply, 200, await mustShow(t.name));
      });

      registerUsageRoutes(admin, deps);

      admin.get('/budget', async (_request, reply) => send(reply, 200, { provider: budgetsView(await deps.accounting.providerStates(now())) }));

      admin.get('/cache/stats', async (_request, reply) => send(reply, 200, cacheStatsView(await cache.readStats())));

      admin.post('/cache/purge', async (request, reply) => {
        const b = bodyOf(request, new Set(['url', 'id', 'endpoint', 'all']));
        for (const f of ['url', 'id', 'endpoint'] as const) {
          if (b[f] !== undefined && typeof b[f] !== 'string') throw new Refusal(failure('INVALID_PARAMETER', `${f} must be a string.`));
        }
        if (b.all !== undefined && typeof b.all !== 'boolean') throw new Refusal(failure('INVALID_PARAMETER', 'all must be true or false.'));
        const filter = purgeFilter(b as { url?: string; id?: string; endpoint?: string; all?: boolean }, deps.config.network.domain);
        if (typeof filter === 'string') throw new Refusal(failure('INVALID_PARAMETER', `${filter.replace(/--/g, '')}.`));
        // The server's port purges in bounded batches with the event loop's turn between them;
        // cache.db is not the audit log's database, so its entry follows the purge (README "Audit log").
        const purged = await cache.purge(filter);
        await audit.append(purgeChange(actor, filter, purged));
        return send(reply, 200, { purged });
      });

      // Refused (409 TEAM_NOT_EMPTY) while the team has keys, unless ?reassign=<team> or ?unassign=true says where they go.
      admin.delete<{ Params: { name: string }; Querystring: Record<string, string | undefined> }>('/teams/:name', READS_QUERY, async (request, reply) => {
        const q = request.query;
        onlyParams(q, ['reassign', 'unassign']);
        if (q.unassign !== undefined && q.unassign !== 'true' && q.unassign !== 'false') throw new Refusal(failure('INVALID_PARAMETER', 'unassign: expected true or false.'));
        const { result: d, to } = await deleteTeam(teams, request.params.name, { reassign: q.reassign, unassign: q.unassign === 'true' }, actor);
        if (d.deleted) return send(reply, 200, deletionView(d, to));
        const message = deletionRefusal(request.params.name, d, '?reassign=<team>', '?unassign=true', to);
        const code = d.reason === 'has_keys' ? 'TEAM_NOT_EMPTY' : d.reason === 'not_found' ? 'NOT_FOUND' : 'INVALID_PARAMETER';
        throw new Refusal(failure(code, message));
      });

      admin.get<{ Querystring: Record<string, unknown> }>('/audit', READS_QUERY, async (request, reply) => {
        const q = auditQuery(request.query);
        if (isAuditInputError(q)) throw new Refusal(failure(q.code, `${q.field}: ${q.message}.`));
        return send(reply, 200, auditPageView(await audit.list(q)));
      });

      admin.get<{ Querystring: Record<string, unknown> }>('/notifications', READS_QUERY, async (request, reply) => {
        const q = notificationsQuery(request.query);
        if (isNotificationsInputError(q)) throw new Refusal(failure(q.code, `${q.field}: ${q.message}.`));
        return send(reply, 200, await notificationsView(deps.backend, q));
      });
    },
    { prefix: '/admin' },
  );
}
