import type { FastifyReply, FastifyRequest } from 'fastify';
import { failure, type Failure } from '../domain/errors.js';
import { sendFailure as sendAnswerFailure } from '../http/fastify-reply.js';

/** A refusal travels as a thrown value inside a handler and becomes the error envelope (routes.ts). */
export class Refusal {
  constructor(readonly f: Failure) {}
}

export function send(reply: FastifyReply, status: number, body: unknown) {
  return reply.code(status).header('cache-control', 'no-store').type('application/json; charset=utf-8').send(JSON.stringify(body));
}

/** Admin answers are never cached by intermediaries. */
export function sendFailure(reply: FastifyReply, f: Failure, extra?: Record<string, string>) {
  return sendAnswerFailure(reply, f, { ...extra, 'cache-control': 'no-store' });
}

export function bodyOf(request: FastifyRequest, allowed: ReadonlySet<string>): Record<string, unknown> {
  const b = request.body ?? {};
  if (typeof b !== 'object' || Array.isArray(b) || b === null) throw new Refusal(failure('INVALID_PARAMETER', 'The request body must be a JSON object.'));
  for (const k of Object.keys(b)) {
    if (!allowed.has(k)) throw new Refusal(failure('UNKNOWN_PARAMETER', `Unknown field '${k}'; allowed: ${[...allowed].join(', ')}.`));
  }
  return b as Record<string, unknown>;
}

/** Refuse query parameters other than `allowed`. */
export function onlyParams(query: Record<string, unknown>, allowed: readonly string[]): void {
  for (const k of Object.keys(query)) {
    if (!allowed.includes(k)) throw new Refusal(failure('UNKNOWN_PARAMETER', `Unknown parameter '${k}'; allowed: ${allowed.join(', ')}.`));
    // Repeated (`?by=key&by=team`), a value arrives as an array: one meaning or none.
    if (typeof query[k] !== 'string') throw new Refusal(failure('INVALID_PARAMETER', `${k}: give it once.`));
  }
}
