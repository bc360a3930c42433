import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { pipeline, type Readable } from 'node:stream';
import { errorAnswer, type Answer, type BodyPieces } from '../domain/answer.js';
import { failure, type Failure } from '../domain/errors.js';
import { isStorageError } from '../store/storage-errors.js';
import type { LookupTrace } from '../domain/trace.js';
import type { TraceContext } from '../domain/trace-context.js';
import { RequestLines, requestFields } from '../obs/request-log.js';
import type { ServerDeps } from './deps.js';
import { JSON_CONTENT_TYPE, keylessRateFields } from './edge.js';
import { TurnWrites } from './turn-writes.js';
import { endedByParserRefusal } from './parser-errors.js';

/**
 * How every data-plane answer leaves (src/http/data-plane.ts): written at the end of the
 * event-loop turn (TurnWrites), with X-Request-Id and Content-Type, `Connection: close` while
 * draining, then counted in the metrics and written as the one log line. A write that fails
 * becomes a 500 when nothing was sent yet.
 *
 * `endpoint` is the metrics label: a lookup's name, `passthrough` or `unmatched`; the log
 * line names it too, except `unmatched`. `null` is a request refused before any route,
 * counted with the parser-level refusals instead.
 *
 * Arguments are positional, not a context object: the cache-hit path allocates nothing more.
 */
export class AnswerWriter {
  private readonly writes: TurnWrites;
  private readonly lines: RequestLines;

  constructor(private readonly deps: ServerDeps) {
    this.lines = new RequestLines(deps.logger);
    this.writes = new TurnWrites((err) => deps.logger.error({ err }, 'unhandled error while writing an answer'), this.lines);
  }

  send(req: IncomingMessage, res: ServerResponse, endpoint: string | null, a: Answer, ip: string, requestId: string, tc: TraceContext, trace: LookupTrace | null, t0: number): void {
    this.writes.defer(() => {
      const socket = res.socket;
      if (socket?.writableEnded) {
        // Ended under this answer: nothing can follow on the connection (a write, or a destroy,
        // could cost the bytes the ending wrote). The parser's refusal of this request's body
        // was its answer, counted there; any other ending leaves the answer decided but undelivered.
        if (!endedByParserRefusal.has(socket)) this.record(req, endpoint, a, ip, requestId, tc, trace, t0);
        return;
      }
      try {
        const headers = a.headers;
        const pieces = a.bodyPieces;
        headers['x-request-id'] = requestId;
        headers['content-type'] = JSON_CONTENT_TYPE;
        headers['content-length'] = String(pieces ? piecesLength(pieces) : Buffer.byteLength(a.body));
        // Answers finishing during a drain close their connection, so a keep-alive socket cannot hold the shutdown open.
        if (this.deps.ops.draining()) headers.connection = 'close';
        // HEAD: node:http sends the headers (Content-Length included) and drops the body.
        // writeHead throws on a header value node refuses (say, a provider request id with a control character).
        res.writeHead(a.status, headers);
        // Strings, not a Buffer: node joins a string body to the head, and a Buffer body's head
        // is put ahead of a queued pipelined answer's `100 Continue`, splitting head from body
        // (test/integration/http-fuzz.test.ts's raw exchanges find it). A success answer's pieces
        // are written apart, in one writev: its data, a flat string, is encoded straight into
        // the socket's buffer, where joined to the envelope it was first copied whole into a new
        // string twice (for its byte length, then for the write), at two bytes a character when
        // any is beyond Latin-1.
        if (pieces) {
          res.write(pieces[0]);
          res.write(pieces[1]);
          res.end(pieces[2]);
        } else res.end(a.body);
      } catch (err) {
        this.deps.logger.error({ err, ...requestFields(requestId, tc) }, 'unhandled error');
        // Headers already out (the body write failed), or the error answer itself failed: nothing truthful can follow.
        if (res.headersSent || a.errorCode === 'INTERNAL_ERROR') res.destroy();
        else this.refuse(req, res, endpoint, failure('INTERNAL_ERROR'), ip, requestId, tc, t0, trace);
        return;
      }
      this.record(req, endpoint, a, ip, requestId, tc, trace, t0);
    });
  }

  /** An answer whose body streams (pass-through): metered and logged once the body is out. */
  stream(req: IncomingMessage, res: ServerResponse, endpoint: string, a: Answer, body: Readable, ip: string, requestId: string, tc: TraceContext, trace: LookupTrace, t0: number): void {
    this.writes.defer(() => {
      const socket = res.socket;
      if (socket?.writableEnded) {
        body.destroy();
        if (!endedByParserRefusal.has(socket)) this.record(req, endpoint, a, ip, requestId, tc, trace, t0);
        return;
      }
      try {
        a.headers['x-request-id'] = requestId;
        if (this.deps.ops.draining()) a.headers.connection = 'close';
        res.writeHead(a.status, a.headers);
      } catch (err) {
        body.destroy();
        this.deps.logger.error({ err, ...requestFields(requestId, tc) }, 'unhandled error');
        if (res.headersSent) res.destroy();
        else this.refuse(req, res, endpoint, failure('INTERNAL_ERROR'), ip, requestId, tc, t0, trace);
        return;
      }
      // A body cut short (the provider or the client hung up) ends the response unfinished.
      pipeline(body, res, () => this.record(req, endpoint, a, ip, requestId, tc, trace, t0));
    });
  }

  /** An error answer without a key: it carries the failed-key limiter's rate fields, like every /v1 answer. */
  refuse(req: IncomingMessage, res: ServerResponse, endpoint: string | null, f: Failure, ip: string, requestId: string, tc: TraceContext, t0: number, trace: LookupTrace | null = null): void {
    this.send(req, res, endpoint, errorAnswer(f, requestId, keylessRateFields(this.deps, ip, this.deps.clock.now())), ip, requestId, tc, trace, t0);
  }

  /** The 500 fallback for a route that threw. */
  fail(req: IncomingMessage, res: ServerResponse, endpoint: string | null, err: unknown, ip: string, requestId: string, tc: TraceContext, t0: number, trace: LookupTrace | null): void {
    // Storage that cannot answer (a shared database or Redis down, a key lookup timing out) is
    // the client's 503 to retry, not a bug: nothing was spent without a reservation.
    if (isStorageError(err)) {
      this.deps.logger.warn({ err, ...requestFields(requestId, tc) }, 'storage unavailable');
      this.refuse(req, res, endpoint, failure('STORAGE_UNAVAILABLE', undefined, { 'retry-after': '1' }), ip, requestId, tc, t0, trace);
      return;
    }
    this.deps.logger.error({ err, ...requestFields(requestId, tc) }, 'unhandled error');
    this.refuse(req, res, endpoint, failure('INTERNAL_ERROR'), ip, requestId, tc, t0, trace);
  }

  private record(req: IncomingMessage, endpoint: string | null, a: Answer, ip: string, requestId: string, tc: TraceContext, trace: LookupTrace | null, t0: number): void {
    const seconds = (performance.now() - t0) / 1000;
    const { metrics } = this.deps.ops;
    if (endpoint === null) metrics.observeClientError(a.errorCode!);
    else {
      metrics.observeRequest({
        endpoint,
        status: a.status,
        seconds,
        cache: trace?.cache,
        collapsed: trace?.collapsed,
        keyName: trace?.keyName,
        creditsUsed: trace?.creditsUsed,
        creditsSaved: trace?.creditsSaved,
        errorCode: a.errorCode ?? null,
      });
    }
    const logged = endpoint === UNMATCHED ? null : endpoint;
    this.lines.add({ requestId, traceContext: tc, clientIp: ip, method: req.method!, url: req.url!, status: a.status, code: a.errorCode, endpoint: logged, trace, ms: seconds * 1000 });
  }
}

/** How many bytes the pieces make: their answer's Content-Length. */
function piecesLength(p: BodyPieces): number {
  return Buffer.byteLength(p[0]) + Buffer.byteLength(p[1]) + Buffer.byteLength(p[2]);
}

/** The metrics label of a /v1 request no route took. */
export const UNMATCHED = 'unmatched';
