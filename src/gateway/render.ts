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
 * The success envelope, assembled around `dataText` (already-serialized JSON) so that a
 * cached body is never parsed and re-serialized. With `meta` null, the envelope is left
 * open after `"meta":` for the caller to finish with meta text and `}`.
 */
export function successBody(requestId: string, dataText: string, meta: Record<string, unknown> | null): string {
  const head = `{"request_id":${JSON.stringify(requestId)},"data":${dataText},"meta":`;
  return meta === null ? head : head + JSON.stringify(meta) + '}';
}
