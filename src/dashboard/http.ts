import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { utf8Escapes } from '../domain/params.js';

/*
 * What every dashboard route shares: the security headers, the form body, and how a page is
 * left for another (POST → 303 → GET).
 */

/**
 * Nothing but this origin: scripts and styles only from files the gateway serves (no inline
 * script or style, so an injected one would not run), no frames of it anywhere, forms posting
 * only here. Chart.js sets canvas sizes through the CSSOM, which style-src does not govern.
 */
export const DASHBOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** The headers of every dashboard answer; pages are never stored anywhere (assets override cache-control). */
export function securityHeaders(reply: FastifyReply): void {
  reply.headers({
    'content-security-policy': DASHBOARD_CSP,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    'cross-origin-opener-policy': 'same-origin',
    'cache-control': 'no-store',
  });
}

/** A form as posted: each field's values (a repeated field, such as checkboxes, has several). */
export type Form = Readonly<Record<string, string | string[]>>;

/**
 * urlencoded bodies become a Form, in this plugin's scope only (/admin keeps JSON alone), and
 * nothing else is read: no dashboard form sends JSON or text, and a JSON body's values (a number,
 * null, an object) were no form's strings, which the handlers met with a 500. Any other type is
 * refused (415, answered as a form that could not be read: index.ts). A form that is not UTF-8,
 * in its bytes or its escapes, is refused (400): decoded, it had U+FFFD in their place, and a
 * key or team was stored under a name other than the one sent.
 */
export function acceptForms(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'buffer', bodyLimit: 16 * 1024 }, (_request, raw, done) => {
    const body = (raw as Buffer).toString('utf8');
    if (!isUtf8(raw as Buffer) || !utf8Escapes(body)) return done(Object.assign(new Error('form not UTF-8'), { statusCode: 400 }), undefined);
    // No prototype: a field named `__proto__` is a field like any other, not the object's prototype
    // (which made every field the form did not send read from Array.prototype, e.g. `keys`).
    const out: Record<string, string | string[]> = Object.create(null);
    for (const [k, v] of new URLSearchParams(body)) {
      const prev = out[k];
      // Only checkboxes repeat: any other field given twice was read as its first value, so
      // `by=url&by=all` purged by URL. Refused, naming it, as a page's query is (pageQuery).
      if (prev !== undefined && !REPEATABLE.has(k)) return done(new FormProblem(`${k}: give it once`), undefined);
      out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    done(null, out);
  });
}

/** The form fields that are sets of checkboxes: the only ones a form may send more than once. */
const REPEATABLE: ReadonlySet<string> = new Set(['endpoints', 'strategies']);

/** A form that was read but cannot be taken as sent: a 400 page with this message (index.ts). */
export class FormProblem extends Error {
  readonly statusCode = 400;
}

/** The form of a request: empty when it had none (or not a form). */
export function formOf(request: FastifyRequest): Form {
  const b = request.body;
  return b && typeof b === 'object' && !Array.isArray(b) ? (b as Form) : {};
}

/** A field's first value, trimmed; undefined when absent. */
export function field(form: Form, name: string): string | undefined {
  const v = form[name];
  const first = Array.isArray(v) ? v[0] : v;
  return first === undefined ? undefined : first.trim();
}

/** Every value of a field (checkboxes). */
export function fields(form: Form, name: string): string[] {
  const v = form[name];
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

/** A page's query as read: each parameter's value, a repeated one (`multi`) all of them. */
export type PageQuery = { readonly one: Readonly<Record<string, string>>; readonly many: Readonly<Record<string, readonly string[]>> };

/**
 * A page's query, strictly, as the admin API reads its own (admin/reply.ts onlyParams): a
 * parameter the page does not read, or one of `single` given twice, is refused (a message for
 * the page's 400), not dropped or cut to its first value: a hand-edited `?form=2026-01-01` or
 * `?by=teams` showed the default report as if it were the one asked for. `multi` may repeat.
 */
export function pageQuery(request: FastifyRequest, single: readonly string[], multi: readonly string[] = []): PageQuery | string {
  const q = (request.query ?? {}) as Record<string, string | string[] | undefined>;
  const one: Record<string, string> = {};
  const many: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined) continue;
    if (multi.includes(k)) many[k] = Array.isArray(v) ? v : [v];
    else if (!single.includes(k)) return `Unknown parameter '${k}'; this page reads ${[...single, ...multi].join(', ')}`;
    else if (Array.isArray(v)) return `${k}: give it once`;
    else one[k] = v;
  }
  return { one, many };
}

/** After a change: the browser is sent to a page it can reload without sending the form again. */
export function seeOther(reply: FastifyReply, location: string) {
  return reply.code(303).header('location', location).send();
}
