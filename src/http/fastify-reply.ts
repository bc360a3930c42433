import type { FastifyReply } from 'fastify';
import { errorAnswer, type Answer } from '../domain/answer.js';
import type { Failure } from '../domain/errors.js';

/** Send an Answer, remembering its error code for the log line and metrics. */
export function sendAnswer(reply: FastifyReply, a: Answer) {
  if (a.errorCode) reply.request.errorCode = a.errorCode;
  return reply.code(a.status).headers(a.headers).type('application/json; charset=utf-8').send(a.body);
}

export function sendFailure(reply: FastifyReply, f: Failure, extra?: Record<string, string>) {
  return sendAnswer(reply, errorAnswer(f, reply.request.id, extra));
}
