import type { FastifyReply } from 'fastify';
import { errorEnvelope, type Failure } from '../api/errors.js';

/** What the HTTP layer sends: status, headers and a ready JSON body. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The error code of an error answer, for logs and metrics. */
  errorCode?: string;
}

export function errorAnswer(f: Failure, requestId: string, extra?: Record<string, string>): Answer {
  return {
    status: f.status,
    headers: { ...extra, ...f.headers },
    body: JSON.stringify(errorEnvelope(f, requestId)),
    errorCode: f.code,
  };
}

/**
 * The success envelope, assembled around already-serialized `data` and `meta` JSON so that
 * a cached body is never parsed and re-serialized.
 */
export function successBody(requestId: string, dataText: string, metaText: string): string {
  return `{"request_id":${JSON.stringify(requestId)},"data":${dataText},"meta":${metaText}}`;
}

/** Send an Answer, remembering its error code for the log line and metrics. */
export function sendAnswer(reply: FastifyReply, a: Answer) {
  if (a.errorCode) reply.request.errorCode = a.errorCode;
  return reply.code(a.status).headers(a.headers).type('application/json; charset=utf-8').send(a.body);
}

export function sendFailure(reply: FastifyReply, f: Failure, extra?: Record<string, string>) {
  return sendAnswer(reply, errorAnswer(f, reply.request.id, extra));
}
