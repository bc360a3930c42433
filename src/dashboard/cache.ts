import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { cacheStatsView } from '../admin/cache.js';
import { purgeChange } from '../domain/audit.js';
import { ENDPOINT_NAMES } from '../domain/endpoints.js';
import { purgeFilter } from '../domain/purge-filter.js';
import { frameOf, sessionOf, show, type DashboardDeps } from './context.js';
import { field, formOf, seeOther } from './http.js';
import { FORMAT } from './render.js';

/** The purge form's fields as typed, shown again with an error. */
interface Typed {
  by: string;
  url: string;
  id: string;
  endpoint: string;
}

/** The cache: entries, bytes and hit ratio (per endpoint too), and purges by URL, id, endpoint or all, audited like the admin API's. */
export function registerCache(app: FastifyInstance, deps: DashboardDeps): void {
  const { cache, audit } = deps.backend;

  const view = async (request: FastifyRequest, reply: FastifyReply, status: number, error: string | null, notice: string | null, typed: Typed) => {
    const stats = cacheStatsView(await cache.readStats());
    return show(request, reply, 'cache', frameOf(request, 'Cache', 'cache', { error, notice }), { stats, endpoints: ENDPOINT_NAMES, typed }, status);
  };

  app.get('/cache', async (request, reply) => {
    const purged = (request.query as Record<string, unknown>).purged;
    const notice = typeof purged === 'string' && /^[0-9]{1,12}$/.test(purged) ? `Purged ${FORMAT.num(Number(purged))} entries.` : null;
    return view(request, reply, 200, null, notice, { by: 'url', url: '', id: '', endpoint: '' });
  });

  app.post('/cache/purge', async (request, reply) => {
    const form = formOf(request);
    const typed: Typed = { by: field(form, 'by') ?? '', url: field(form, 'url') ?? '', id: field(form, 'id') ?? '', endpoint: field(form, 'endpoint') ?? '' };
    const endpoint = typed.endpoint === '' ? undefined : typed.endpoint;
    // One way at a time, as the radio buttons choose: what the other fields still hold is left out.
    const input =
      typed.by === 'url' ? { url: typed.url, endpoint } : typed.by === 'id' ? { id: typed.id, endpoint } : typed.by === 'endpoint' ? { endpoint: endpoint ?? '' } : typed.by === 'all' ? { all: true } : null;
    if (!input) return view(request, reply, 400, 'Choose what to purge.', null, typed);
    if ('url' in input && !input.url) return view(request, reply, 400, 'Enter the URL of a profile or company.', null, typed);
    if ('id' in input && !input.id) return view(request, reply, 400, 'Enter an id such as person.id=7 or org_id=42.', null, typed);
    if (typed.by === 'endpoint' && !endpoint) return view(request, reply, 400, 'Choose an endpoint.', null, typed);
    const filter = purgeFilter(input, deps.config.network.domain);
    if (typeof filter === 'string') return view(request, reply, 400, `${filter.replace(/--/g, '')}.`, null, typed);
    // As the admin API does: the purge, then its audit entry (cache.db is not the audit log's database).
    const purged = await cache.purge(filter);
    await audit.append(purgeChange(sessionOf(request).actor, filter, purged));
    return seeOther(reply, `/dashboard/cache?purged=${purged}`);
  });
}
