import { fileURLToPath } from 'node:url';
import type { FastifyReply } from 'fastify';
import { Eta } from 'eta';

/*
 * Pages are Eta templates (views/*.eta, copied beside this module into dist/ by the build):
 * every `<%= %>` is HTML-escaped, and raw output has to be asked for with `<%~ %>`, which the
 * templates use only for what another template rendered. Compiled once and cached.
 */

const eta = new Eta({ views: fileURLToPath(new URL('./views', import.meta.url)), cache: true, autoEscape: true });

/** The navigation's pages, by the names their links show. */
export const NAV = [
  ['overview', 'Overview', '/dashboard'],
  ['keys', 'Keys', '/dashboard/keys'],
  ['teams', 'Teams', '/dashboard/teams'],
  ['usage', 'Usage', '/dashboard/usage'],
  ['cache', 'Cache', '/dashboard/cache'],
  ['audit', 'Audit', '/dashboard/audit'],
  ['alerts', 'Alerts', '/dashboard/alerts'],
] as const;

export type NavPage = (typeof NAV)[number][0];

/** What the layout needs of every page. */
export interface Frame {
  readonly title: string;
  /** The highlighted link ('' for none, as on an error page); null on the sign-in page, which shows no navigation. */
  readonly nav: NavPage | '' | null;
  /** The session's CSRF token for the forms (the sign-out button's too); null when signed out. */
  readonly csrf: string | null;
  /** A message above the page: what just happened, or what was wrong. */
  readonly notice?: string | null;
  readonly error?: string | null;
}

const iso = (t: string | number | null | undefined): string => {
  if (t === null || t === undefined) return '—';
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? '—' : d.toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
};

/*
 * Made when the module loads, before the server listens: the first number format sets up ICU's
 * locale data, ~12 ms, which the first page after a start paid inside a request (its
 * `toLocaleString`), holding every lookup behind it.
 */
const GROUPED = new Intl.NumberFormat('en-US');

/** Formatting the templates share, so that figures read alike on every page. */
export const FORMAT = {
  num: (n: number | null | undefined) => (n === null || n === undefined ? '—' : GROUPED.format(n)),
  pct: (r: number | null | undefined) => (r === null || r === undefined || Number.isNaN(r) ? '—' : `${(r * 100).toFixed(1)}%`),
  time: iso,
  bytes: (n: number) => (n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(1)} KiB` : n < 1024 ** 3 ? `${(n / 1024 ** 2).toFixed(1)} MiB` : `${(n / 1024 ** 3).toFixed(2)} GiB`),
  json: (v: unknown) => JSON.stringify(v, null, 1),
  /** Data for a chart, inside <script type="application/json">: `<` escaped so no tag can end it. */
  chartJson: (v: unknown) => JSON.stringify(v).replace(/</g, '\\u003c'),
};

/** Render `view` with its data and the frame, and send it. */
export function page<T extends object>(reply: FastifyReply, status: number, view: string, frame: Frame, data: T) {
  const html = eta.render(`./${view}`, { ...data, frame, nav: NAV, f: FORMAT });
  return reply.code(status).type('text/html; charset=utf-8').send(html);
}
