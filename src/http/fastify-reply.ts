import type { FastifyReply } from 'fastify';
import { errorAnswer, type Answer } from '../domain/answer.js';
import type { Failure } from '../domain/errors.js';
import type { TraceContext } from '../domain/trace-context.js';
import { JSON_CONTENT_TYPE } from './edge.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The error code answered, if any (set by sendAnswer), for the log line and metrics. */
    errorCode: string | null;
    /** The client address by the rule of src/http/client-ip.ts (control-plane.ts defines it). */
    readonly clientIp: string;
    /** The request's W3C trace context (control-plane.ts sets it; read it with traceOf). */
    traceContext: TraceContext | null;
  }
}

/** Send an Answer, remembering its error code for the log line and metrics. */
export function sendAnswer(reply: FastifyReply, a: Answer) {
  if (a.errorCode) reply.request.errorCode = a.errorCode;
  return reply.code(a.status).headers(a.headers).type(JSON_CONTENT_TYPE).send(a.body);
}

export function sendFailure(reply: FastifyReply, f: Failure, extra?: Record<string, string>) {
  return sendAnswer(reply, errorAnswer(f, reply.request.id, extra));
}
