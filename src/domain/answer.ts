import { errorEnvelope, type Failure } from './errors.js';

/** What the HTTP layer sends: status, headers and a ready JSON body. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** `body` as the pieces it was joined from (successBody): what the HTTP layer writes when given. */
  bodyPieces?: BodyPieces;
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

/** A success body as the text before the data, the data, and the text after. */
export type BodyPieces = readonly [head: string, data: string, tail: string];

/**
 * The success envelope, assembled around already-serialized `data` and `meta` JSON so that
 * a cached body is never parsed and re-serialized: its text, and the pieces it is joined from
 * (Answer.bodyPieces). The join copies nothing: V8 makes a rope of the three strings, copied
 * into one only if the text is read.
 */
export function successBody(requestId: string, dataText: string, metaText: string): { body: string; bodyPieces: BodyPieces } {
  const head = `{"request_id":${JSON.stringify(requestId)},"data":`;
  const tail = `,"meta":${metaText}}`;
  return { body: head + dataText + tail, bodyPieces: [head, dataText, tail] };
}

/**
 * An answer relayed from the provider (pass-through) with the gateway's request id in its
 * envelope: the caller's request is the gateway's, whose id X-Request-Id carries, and the
 * provider's own stays in X-Upstream-Request-Id. Only the id's text is replaced — the body is
 * never re-serialized, which could round large numeric ids — and bodies that are not an
 * envelope pass as they are.
 */
export function withRequestId(a: Answer, requestId: string): Answer {
  if (a.body.includes(requestId) || !a.body.includes('"request_id"')) return a;
  let body: unknown;
  try {
    body = JSON.parse(a.body);
  } catch {
    return a;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return a;
  const o = body as { request_id?: unknown; error?: { request_id?: unknown } | null };
  const ids = new Set<string>();
  if (typeof o.request_id === 'string') ids.add(o.request_id);
  if (typeof o.error === 'object' && o.error !== null && typeof o.error.request_id === 'string') ids.add(o.error.request_id);
  let text = a.body;
  for (const id of ids) {
    const quoted = JSON.stringify(id).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    text = text.replace(new RegExp(`("request_id"\\s*:\\s*)${quoted}`, 'g'), (_m, key: string) => key + JSON.stringify(requestId));
  }
  // Pieces of the old text, if any, would put the provider's request id back on the wire.
  return text === a.body ? a : { ...a, body: text, bodyPieces: undefined };
}
