import type { FastifyInstance } from 'fastify';
import { failure } from '../domain/errors.js';
import { UsageRangePruned } from '../domain/ledger.js';
import type { AdminDeps } from './deps.js';
import { overviewView } from './overview.js';
import { forMethod, pagedStream, slicesOf } from './in-slices.js';
import { jsonParts, onlyParams, READS_QUERY, Refusal, send, sendJsonStream } from './reply.js';
import { compactTime, usageGroups, usageWindow } from './usage.js';
import { CSV_DIMENSIONS, groupedJsonText, usageCsvParts } from './usage-breakdown.js';

type Query = { Querystring: Record<string, string | undefined> };

/** A range refused for retention is the client's to change: 400, with the refusal's explanation. */
const refused = (err: unknown) => {
  throw err instanceof UsageRangePruned ? new Refusal(failure('INVALID_PARAMETER', `${err.message}.`)) : err;
};

/**
 * /admin/usage, /admin/usage/export.csv and /admin/overview, inside the admin API's scope (its
 * token check and error handling: routes.ts). Every read of the ledger here is the worker
 * thread's on SQLite: a report over a large ledger never stalls the gateway.
 */
export function registerUsageRoutes(admin: FastifyInstance, deps: AdminDeps): void {
  const { ledger } = deps.backend;
  const window = (q: Record<string, string | undefined>) => {
    const w = usageWindow(q.from, q.to, deps.clock.now());
    if (typeof w === 'string') throw new Refusal(failure('INVALID_PARAMETER', `${w}.`));
    return w;
  };
  const iso = (t: number) => new Date(t).toISOString();

  // One grouping: the report's rows ({id, name, …}). Several (`by=team,day`): one row per
  // combination, named by its dimensions (README "Usage").
  admin.get<Query>('/usage', READS_QUERY, async (request, reply) => {
    const q = request.query;
    onlyParams(q, ['from', 'to', 'by']);
    const by = usageGroups(q.by);
    if (typeof by === 'string') throw new Refusal(failure('INVALID_PARAMETER', `${by}.`));
    const w = window(q);
    if (by.length === 1) {
      const rows = await ledger.report(w.from, w.to, by[0]!).catch(refused);
      return send(reply, 200, { from: iso(w.from), to: iso(w.to), by: by[0], rows });
    }
    // Read, serialized and written a page at a time (in-slices.ts): by key and day, a year of 200 keys is 73,000 rows.
    const head = `{"from":${JSON.stringify(iso(w.from))},"to":${JSON.stringify(iso(w.to))},"by":${JSON.stringify(by)},"rows":[`;
    const body = await pagedStream(ledger.rollUpPages(w.from, w.to, by), (pages) => jsonParts(head, slicesOf(pages, groupedJsonText(by), ','), ']}')).catch(refused);
    return sendJsonStream(reply, 200, forMethod(request.method, body));
  });

  admin.get<Query>('/usage/export.csv', READS_QUERY, async (request, reply) => {
    onlyParams(request.query, ['from', 'to']);
    const w = window(request.query);
    const body = await pagedStream(ledger.rollUpPages(w.from, w.to, CSV_DIMENSIONS), usageCsvParts).catch(refused);
    return reply
      .code(200)
      .header('cache-control', 'no-store')
      .header('content-disposition', `attachment; filename="tollgate-usage-${compactTime(w.from)}-${compactTime(w.to)}.csv"`)
      .type('text/csv; charset=utf-8')
      .send(forMethod(request.method, body));
  });

  // Its query parameters, none, are refused by the admin scope's hook (routes.ts).
  admin.get<Query>('/overview', async (_request, reply) => {
    return send(reply, 200, await overviewView(deps, deps.clock.now()));
  });
}
