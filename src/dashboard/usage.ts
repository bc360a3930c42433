import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { compactTime, usageWindow } from '../admin/usage.js';
import { CSV_DIMENSIONS, usageCsvParts, type RolledRow, type UsageDimension } from '../admin/usage-breakdown.js';
import { forMethod, pagedStream } from '../admin/in-slices.js';
import { UsageRangePruned } from '../domain/ledger.js';
import { frameOf, show, type DashboardDeps } from './context.js';
import { pageQuery } from './http.js';

/*
 * Usage over a chosen range, grouped by any of team, key, endpoint and day (admin/usage-
 * breakdown.ts, the rows the admin API's report and the CSV sum), as a chart and a table, and
 * the CSV export (GET /dashboard/usage.csv: the admin export, through the session).
 */

const DIMENSIONS: ReadonlyArray<readonly [UsageDimension, string]> = [['team', 'Team'], ['key', 'Key'], ['endpoint', 'Endpoint'], ['day', 'Day']];
/** The chart shows at most this many groups (the biggest spenders), unless grouped by day alone. */
const CHART_ROWS = 40;
/**
 * Rows the table shows; the totals count them all. By key and day, two years of 200 keys is
 * 146,000 rows: a 37 MB page whose rendering held the event loop 1.2 s. Every row is in
 * GET /admin/usage and `tollgate usage` with the same grouping.
 */
export const TABLE_ROWS = 1_000;

/** The `n` rows that spent most (then most requests), in that order, without sorting them all. */
export function biggestSpenders(rows: readonly RolledRow[], n: number): RolledRow[] {
  const before = (a: RolledRow, b: RolledRow) => b.credits - a.credits || b.requests - a.requests;
  const top: RolledRow[] = [];
  for (const r of rows) {
    if (top.length === n && before(r, top[n - 1]!) >= 0) continue;
    let i = top.length === n ? n - 1 : top.length;
    while (i > 0 && before(r, top[i - 1]!) < 0) i--;
    top.splice(i, 0, r);
    if (top.length > n) top.pop();
  }
  return top;
}

const dateOf = (t: number) => new Date(t).toISOString().slice(0, 10);

/** The range and grouping of a query, with the form's values; an error message for a bad one. */
function selection(q: Readonly<Record<string, string>>, all: readonly string[], now: number) {
  const from = q.from || undefined;
  const to = q.to || undefined;
  const by = DIMENSIONS.map(([d]) => d).filter((d) => all.includes(d));
  const unknown = all.find((d) => !DIMENSIONS.some(([known]) => known === d));
  const w = unknown !== undefined ? `by: '${unknown}' is none of ${DIMENSIONS.map(([d]) => d).join(', ')}` : usageWindow(from, to, now);
  // What the form shows: the dates asked for, or the defaults (this month up to today), `to` inclusive.
  const shown = typeof w === 'string' ? { from: from ?? '', to: to ?? '' } : { from: from ?? dateOf(w.from), to: to ?? dateOf(w.to - 1) };
  return { w, by: by.length ? by : (['key'] as UsageDimension[]), shown };
}

function label(r: RolledRow, by: readonly UsageDimension[]): string {
  const parts = by.map((d) => (d === 'key' ? (r.key_name ?? r.key_id) : d === 'team' ? (r.team ?? '(no team)') : d === 'day' ? r.day : r.endpoint));
  return parts.join(' · ');
}

interface ReportView {
  /** The table's rows: the first TABLE_ROWS. */
  shown: RolledRow[];
  /** Grouped by day alone, every day in order; otherwise the CHART_ROWS biggest spenders. */
  charted: RolledRow[];
  allRows: number;
  totals: { requests: number; cache_hits: number; credits: number; credits_saved: number };
}

/** What the usage page shows of a report read page by page, holding no more of it than that. */
async function reportView(pages: AsyncIterable<RolledRow[]>, byDayAlone: boolean): Promise<ReportView> {
  const v: ReportView = { shown: [], charted: [], allRows: 0, totals: { requests: 0, cache_hits: 0, credits: 0, credits_saved: 0 } };
  for await (const page of pages) {
    v.allRows += page.length;
    for (const r of page) {
      v.totals.requests += r.requests;
      v.totals.cache_hits += r.cache_hits;
      v.totals.credits += r.credits;
      v.totals.credits_saved += r.credits_saved;
    }
    if (v.shown.length < TABLE_ROWS) v.shown.push(...page.slice(0, TABLE_ROWS - v.shown.length));
    // The rows kept before a page's come first in the report too, so ties keep the report's order.
    v.charted = byDayAlone ? v.charted.concat(page) : biggestSpenders([...v.charted, ...page], CHART_ROWS);
  }
  return v;
}

export function registerUsage(app: FastifyInstance, deps: DashboardDeps): void {
  const { ledger } = deps.backend;

  const view = (request: FastifyRequest, reply: FastifyReply, status: number, error: string | null, data: object) =>
    show(request, reply, 'usage', frameOf(request, 'Usage', 'usage', { error }), { dimensions: DIMENSIONS, charts: true, ...data }, status);

  app.get('/usage', async (request, reply) => {
    const q = pageQuery(request, ['from', 'to'], ['by']);
    if (typeof q === 'string') return view(request, reply, 400, `${q}.`, { by: ['key'], shown: { from: '', to: '' }, rows: [], chart: null, csv: null });
    const sel = selection(q.one, q.many.by ?? [], deps.clock.now());
    const base = { by: sel.by, shown: sel.shown, rows: [] as RolledRow[], chart: null, csv: null };
    if (typeof sel.w === 'string') return view(request, reply, 400, `${sel.w}.`, base);
    const { from, to } = sel.w;
    let report: ReportView;
    try {
      report = await reportView(ledger.rollUpPages(from, to, sel.by), sel.by.length === 1 && sel.by[0] === 'day');
    } catch (err) {
      if (err instanceof UsageRangePruned) return view(request, reply, 400, `${err.message}.`, base);
      throw err;
    }
    const { shown, charted, allRows, totals } = report;
    const chart = {
      type: 'bar',
      labels: charted.map((r) => label(r, sel.by)),
      series: [
        { label: 'Credits spent', data: charted.map((r) => r.credits) },
        { label: 'Credits saved by the cache', data: charted.map((r) => r.credits_saved) },
      ],
    };
    const csv = `/dashboard/usage.csv?${new URLSearchParams({ from: dateOf(from), to: dateOf(to - 1) })}`;
    return view(request, reply, 200, null, { ...base, rows: shown, allRows, chart, csv, totals });
  });

  // The export for finance: one row per UTC day, team and key (admin/usage-csv.ts, RFC 4180).
  app.get('/usage.csv', async (request, reply) => {
    const read = pageQuery(request, ['from', 'to']);
    const q = typeof read === 'string' ? {} : read.one;
    const w = typeof read === 'string' ? read : usageWindow(q.from || undefined, q.to || undefined, deps.clock.now());
    if (typeof w === 'string') return view(request, reply, 400, `${w}.`, { by: ['key'], shown: { from: q.from ?? '', to: q.to ?? '' }, rows: [], chart: null, csv: null });
    let body: Readable;
    try {
      body = await pagedStream(ledger.rollUpPages(w.from, w.to, CSV_DIMENSIONS), usageCsvParts);
    } catch (err) {
      if (err instanceof UsageRangePruned) return view(request, reply, 400, `${err.message}.`, { by: ['key'], shown: { from: q.from ?? '', to: q.to ?? '' }, rows: [], chart: null, csv: null });
      throw err;
    }
    return reply
      .header('content-disposition', `attachment; filename="tollgate-usage-${compactTime(w.from)}-${compactTime(w.to)}.csv"`)
      .type('text/csv; charset=utf-8')
      .send(forMethod(request.method, body));
  });
}
