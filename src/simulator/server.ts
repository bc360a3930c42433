/**
 * The simulator process: plain node:http for speed, every socket and timer tracked so that
 * close() is prompt even with hanging requests and keep-alive clients.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { EndpointName } from '../domain/endpoints.js';
import { failure } from '../domain/errors.js';
import { newRequestId } from '../domain/request-id.js';
import { systemClock, type Clock } from '../domain/clock.js';
import { CONTROL_PREFIX, handleControl } from './control.js';
import { isSourceFailure, statusFailure, FaultBook } from './faults.js';
import { errorAnswer, handleApi, type Answer, type ApiContext } from './handler.js';
import { SimCache } from './lookup.js';
import { FixedWindow, UNLIMITED } from './ratelimit.js';
import { DEFAULT_API_KEY, DEFAULT_CREDITS, type FaultRule, type SimCall, type SimStats, type Simulator, type SimulatorOptions } from './types.js';
import { chargedError, padded, replacementBody, Timers, withoutCreditsUsed, writeAnswer } from './wire.js';

/** Balance reported by GET /v1/credits before any charge. */
export const INITIAL_CREDIT_BALANCE = 1_000_000;

export class SimServer implements Simulator {
  readonly calls: SimCall[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Timers();
  private readonly faults = new FaultBook();
  private readonly cache = new SimCache();
  private readonly limiter: FixedWindow;
  private readonly clock: Clock;
  private readonly apiKey: string;
  private readonly latencyMs: number;
  private readonly credits: { cached: number; fresh: Record<EndpointName, number> };
  private charged = 0;
  private address = { url: '', port: 0 };
  private closing: Promise<void> | undefined;

  constructor(private readonly opts: SimulatorOptions = {}) {
    this.clock = opts.clock ?? systemClock;
    this.apiKey = opts.apiKey ?? DEFAULT_API_KEY;
    this.latencyMs = opts.latencyMs ?? 0;
    this.credits = opts.credits ?? DEFAULT_CREDITS;
    this.limiter = new FixedWindow(opts.rateLimit ?? UNLIMITED, this.clock, opts.rateLimit !== undefined);
    this.server = createServer((req, res) => this.onRequest(req, res));
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
  }

  get url(): string {
    return this.address.url;
  }

  get port(): number {
    return this.address.port;
  }

  async listen(): Promise<void> {
    const host = this.opts.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.opts.port ?? 0, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const port = (this.server.address() as AddressInfo).port;
    // A wildcard bind is reachable on loopback; IPv6 literals need brackets in a URL.
    const reach = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
    this.address = { url: `http://${reach}:${port}`, port };
  }

  callCount(path?: string): number {
    return path === undefined ? this.calls.length : this.calls.filter((c) => c.path === path).length;
  }

  inject(rule: FaultRule): void {
    this.faults.add(rule);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  reset(): void {
    this.calls.length = 0;
    this.faults.clear();
    this.cache.clear();
    this.limiter.clear();
    this.charged = 0;
  }

  creditsCharged(): number {
    return this.charged;
  }

  stats(): SimStats {
    const byPath: Record<string, number> = {};
    for (const c of this.calls) byPath[c.path] = (byPath[c.path] ?? 0) + 1;
    return { calls: this.calls.length, credits_charged: this.charged, by_path: byPath };
  }

  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.timers.clearAll();
      for (const s of this.sockets) s.destroy();
    });
    return this.closing;
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    const path = q < 0 ? target : target.slice(0, q);
    const query = q < 0 ? '' : target.slice(q + 1);
    if (path.startsWith(CONTROL_PREFIX)) {
      handleControl(req, res, path, this);
      return;
    }
    const method = req.method ?? 'GET';
    const authorization = req.headers.authorization;
    this.calls.push({ method, path, query, authorization, headers: req.headers, at: this.clock.now() });
    const requestId = newRequestId();
    try {
      this.answer(req, res, { method, path, query, authorization }, requestId);
    } catch (err) {
      // A bug in the simulator must look like a provider 500, not a dropped connection.
      const f = failure('INTERNAL_ERROR', `Simulator error: ${(err as Error).message}`);
      if (!res.headersSent) res.writeHead(500, { 'X-Request-Id': requestId, 'Content-Type': 'application/json' });
      res.end(JSON.stringify(errorAnswer(f, requestId).body));
    }
  }

  private answer(
    req: IncomingMessage,
    res: ServerResponse,
    call: { method: string; path: string; query: string; authorization: string | undefined },
    requestId: string,
  ): void {
    const besteffort = new URLSearchParams(call.query).get('strategy') === 'besteffort';
    const fault = this.faults.take(call.path, call.query, besteffort ? (f) => !isSourceFailure(f) : undefined);
    if (fault?.kind === 'reset') {
      req.socket.destroy();
      return;
    }
    if (fault?.kind === 'hang') return; // the socket is tracked; close() ends it

    let answer: Answer;
    const replaced = fault ? replacementBody(fault, requestId) : undefined;
    if (fault?.kind === 'status') answer = chargedError(errorAnswer(statusFailure(fault), requestId), fault.credits);
    else if (replaced !== undefined) answer = { status: 200, headers: {}, body: replaced, credits: 0 };
    else answer = handleApi(call, requestId, this.apiContext(call.path, call.query));
    if (fault?.kind === 'huge') answer = padded(answer, fault.bytes);
    if (fault?.kind === 'unreported-credits') answer = withoutCreditsUsed(answer);
    // Billed when performed, like a real provider: a client that hangs up before the answer
    // arrives (a gateway deadline, a crash) has still spent the credits. An error answer costs
    // nothing unless a fault says it was billed (chargedError).
    this.charged += answer.credits;

    const token = /^\s*bearer\s+(\S+)\s*$/i.exec(call.authorization ?? '')?.[1];
    const base = { 'X-Request-Id': requestId, ...this.limiter.peek(token === this.apiKey ? token : undefined) };
    writeAnswer(res, answer, base, {
      delayMs: this.latencyMs + (fault?.kind === 'latency' ? fault.ms : 0),
      slowBodyMs: fault?.kind === 'slow-body' ? fault.ms : undefined,
      encoded: fault?.kind === 'encoded' ? fault : undefined,
      cutBody: fault?.kind === 'cut-body',
      timers: this.timers,
    });
  }

  private apiContext(path: string, query: string): ApiContext {
    return {
      apiKey: this.apiKey,
      limiter: this.limiter,
      cache: this.cache,
      clock: this.clock,
      credits: this.credits,
      creditsRemaining: () => INITIAL_CREDIT_BALANCE - this.charged,
      sourceFailure: () => {
        const f = this.faults.take(path, query, isSourceFailure);
        return f?.kind === 'status' ? statusFailure(f) : undefined;
      },
    };
  }
}
