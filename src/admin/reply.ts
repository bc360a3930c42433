import type { Readable } from 'node:stream';
import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { failure, type Failure } from '../domain/errors.js';
import { sendFailure as sendAnswerFailure } from '../http/fastify-reply.js';

/**
 * A refusal travels as a thrown value inside a handler and becomes the error envelope
 * (routes.ts). An Error, so that a body parser's done(refusal) reaches the error handler too.
 */
export class Refusal extends Error {
  constructor(readonly f: Failure) {
    super(f.message);
  }
}

/**
 * JSON bodies of this scope, refused unless valid UTF-8: Fastify's own parser decodes bytes
 * that are not UTF-8 to U+FFFD, so a name sent with them was stored changed instead of refused.
 */
export function utf8JsonBodies(scope: FastifyInstance): void {
  const parseJson = scope.getDefaultJsonParser('error', 'error');
  scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    // An empty body is no body, whatever its type says: `fetch(url, { method: 'POST', headers:
    // { 'content-type': 'application/json' } })` sends one, and a revoke or a team's deletion,
    // which read none, were refused as malformed JSON.
    if (bytes.length === 0) return done(null, undefined);
    if (!isUtf8(bytes)) return done(new Refusal(failure('INVALID_PARAMETER', 'The request body is not valid UTF-8.')), undefined);
    parseJson(request, bytes.toString('utf8'), done);
  });
}

export function send(reply: FastifyReply, status: number, body: unknown) {
  return reply.code(status).header('cache-control', 'no-store').type('application/json; charset=utf-8').send(JSON.stringify(body));
}

/** A JSON answer written as it is made: `head`, the parts, `tail` (a long report, admin/in-slices.ts). */
export async function* jsonParts(head: string, parts: AsyncIterable<string>, tail: string): AsyncGenerator<string> {
  yield head;
  yield* parts;
  yield tail;
}

/** As send(), with the body a stream (pagedStream's). */
export function sendJsonStream(reply: FastifyReply, status: number, body: Readable) {
  return reply.code(status).header('cache-control', 'no-store').type('application/json; charset=utf-8').send(body);
}

/** Admin answers are never cached by intermediaries. */
export function sendFailure(reply: FastifyReply, f: Failure, extra?: Record<string, string>) {
  return sendAnswerFailure(reply, f, { ...extra, 'cache-control': 'no-store' });
}

export function bodyOf(request: FastifyRequest, allowed: ReadonlySet<string>): Record<string, unknown> {
  const b = request.body ?? {};
  if (typeof b !== 'object' || Array.isArray(b) || b === null) throw new Refusal(failure('INVALID_PARAMETER', 'The request body must be a JSON object.'));
  for (const k of Object.keys(b)) {
    if (!allowed.has(k)) {
      const takes = allowed.size === 0 ? ': this route takes no body fields' : `; allowed: ${[...allowed].join(', ')}`;
      throw new Refusal(failure('UNKNOWN_PARAMETER', `Unknown field '${k}'${takes}.`));
    }
  }
  return b as Record<string, unknown>;
}

/** Refuse query parameters other than `allowed`. */
export function onlyParams(query: Record<string, unknown>, allowed: readonly string[]): void {
  for (const k of Object.keys(query)) {
    if (!allowed.includes(k)) {
      const takes = allowed.length === 0 ? ': this route takes no query parameters' : `; allowed: ${allowed.join(', ')}`;
      throw new Refusal(failure('UNKNOWN_PARAMETER', `Unknown parameter '${k}'${takes}.`));
    }
    // Repeated (`?by=key&by=team`), a value arrives as an array: one meaning or none.
    if (typeof query[k] !== 'string') throw new Refusal(failure('INVALID_PARAMETER', `${k}: give it once.`));
  }
}

/**
 * The route options of a route that reads its query itself (and refuses what it does not
 * read). Every other admin route refuses any query parameter (routes.ts): dropped, `PUT
 * /admin/teams/x?credits=5000/month` made a team without a budget, and `GET /admin/keys?team=x`
 * answered every key as if filtered.
 */
export const READS_QUERY = { config: { readsQuery: true } } as const;

export function readsQuery(request: FastifyRequest): boolean {
  return (request.routeOptions.config as { readsQuery?: boolean }).readsQuery === true;
}
