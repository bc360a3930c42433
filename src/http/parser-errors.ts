import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { errorAnswer } from '../domain/answer.js';
import { failure, type Failure } from '../domain/errors.js';
import { newRequestId } from '../domain/request-id.js';
import { clientIp, type TrustedProxies } from './client-ip.js';
import type { ServerDeps } from './deps.js';
import { isV1Path, JSON_CONTENT_TYPE, keylessRateFields } from './edge.js';

/** Of a refused request's first bytes: its target and X-Forwarded-For, as far as they can be read. */
export interface RequestHead {
  readonly target: string;
  readonly xff: string | string[] | undefined;
}

/**
 * Best effort over bytes node's parser refused: the request line's target and any
 * X-Forwarded-For lines before the first blank line. Node hands over only the chunk it was
 * parsing, so a request whose start arrived in an earlier chunk (or never: a timeout) has no head.
 */
export function requestHead(raw: unknown): RequestHead | null {
  // Typed by Fastify as a JSON-ified Buffer; node passes the Buffer itself.
  if (!Buffer.isBuffer(raw) || raw.length === 0) return null;
  const text = raw.toString('latin1', 0, Math.min(raw.length, 64 * 1024));
  const lines = text.split(/\r?\n/);
  const m = /^[!-~]+ +(\S+)/.exec(lines[0]!);
  if (!m) return null;
  const xff: string[] = [];
  for (let i = 1; i < lines.length && lines[i] !== ''; i++) {
    const h = /^x-forwarded-for[ \t]*:(.*)$/i.exec(lines[i]!);
    if (h) xff.push(h[1]!.trim());
  }
  return { target: m[1]!, xff: xff.length > 0 ? xff.join(', ') : undefined };
}

/** node:http's per-connection state the refusals below must respect. */
interface HttpSocket extends Socket {
  /** The answer in flight on this connection; answers to later pipelined requests queue behind it. */
  _httpMessage?: ServerResponse | null;
  /** The connection's parser; `incoming` is the last request whose head it parsed. */
  parser?: { incoming?: IncomingMessage | null } | null;
}

/**
 * Answer a refused request on the raw socket, then close it — in turn: answers to earlier
 * pipelined requests still in flight go first, and bytes that were the body of a request a
 * route already answers get no second answer (the connection just closes after it).
 */
function refuseInTurn(socket: HttpSocket, own: IncomingMessage | null, answer: () => void): void {
  let done = false;
  const settle = () => {
    if (done || socket.destroyed) return;
    const res = socket._httpMessage;
    const busy = res != null && !res.writableFinished && !res.destroyed;
    if (busy && res.req !== own) return after(res);
    if (own && (!busy || res.headersSent)) {
      if (busy) return after(res);
      done = true;
      socket.end();
      return;
    }
    done = true;
    if (socket.writable) answer();
    else socket.destroy();
  };
  const after = (res: ServerResponse) => {
    res.once('finish', settle);
    res.once('close', settle);
  };
  settle();
}

/** An error answer written straight to a socket that no HTTP layer will answer, then closed. */
/**
 * Connections the parser's refusal ended: the route still answering a request on one of them
 * (its body was the refused bytes) writes nothing, meters nothing and logs nothing — the
 * refusal written here was that request's answer, counted once, here.
 */
export const endedByParserRefusal = new WeakSet<Socket>();

function writeRaw(socket: Socket, f: Failure, requestId: string, rate: Record<string, string>): void {
  const a = errorAnswer(f, requestId, rate);
  let fields = `Content-Type: ${JSON_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(a.body)}\r\nX-Request-Id: ${requestId}\r\n`;
  for (const [name, value] of Object.entries(a.headers)) fields += `${name}: ${value}\r\n`;
  socket.end(`HTTP/1.1 ${f.status} ${f.code}\r\n${fields}Connection: close\r\n\r\n${a.body}`);
}

/**
 * node:http hands a CONNECT request to the server's 'connect' listeners and, without one,
 * drops the connection unanswered. The gateway tunnels nothing: 405 in the envelope.
 */
export function connectRefusal(deps: ServerDeps, trusted: TrustedProxies): (req: IncomingMessage, socket: Duplex) => void {
  return (req, socket) => {
    const now = deps.clock.now();
    const url = req.url ?? '';
    const rate = isV1Path(url) ? keylessRateFields(deps, clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], trusted), now) : {};
    deps.ops.metrics.observeClientError('METHOD_NOT_ALLOWED');
    const requestId = newRequestId(now);
    // node:http let go of the socket, its error listener included: a reset must not become an uncaught error.
    socket.on('error', () => socket.destroy());
    refuseInTurn(socket as HttpSocket, null, () =>
      writeRaw(socket as Socket, failure('METHOD_NOT_ALLOWED', 'Method CONNECT is not allowed: the gateway tunnels nothing.'), requestId, rate),
    );
  };
}

/**
 * Fastify's clientErrorHandler: a request node's parser refused (malformed, headers too
 * large, too slow) never reaches a route, so it is answered here on the raw socket — in the
 * envelope, with X-Request-Id, and with the failed-key limiter's rate fields when its
 * request line shows a /v1 target.
 */
export function parserErrorHandler(deps: ServerDeps, trusted: TrustedProxies): (err: Error & { code?: string; rawPacket?: unknown }, socket: Socket) => void {
  return (err, socket) => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const s = socket as HttpSocket;
    // A request whose head was parsed but not its body: the refused bytes are that body.
    const inc = s.parser?.incoming;
    const own = inc && !inc.complete ? inc : null;
    const f =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? failure('HEADERS_TOO_LARGE')
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? failure('REQUEST_TIMEOUT')
          : failure('INVALID_PARAMETER', 'Malformed HTTP request.');
    deps.ops.metrics.observeClientError(f.code);
    const now = deps.clock.now();
    const requestId = newRequestId(now);
    const head: RequestHead | null = own ? { target: own.url ?? '', xff: own.headers['x-forwarded-for'] } : requestHead(err.rawPacket);
    const rate = head && isV1Path(head.target) ? keylessRateFields(deps, clientIp(socket.remoteAddress, head.xff, trusted), now) : {};
    if (own) endedByParserRefusal.add(socket);
    refuseInTurn(s, own, () => writeRaw(socket, f, requestId, rate));
  };
}
