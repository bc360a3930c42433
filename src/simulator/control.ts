/**
 * The `/__sim/` control plane, so the demo and benchmarks can steer a simulator running in
 * another process. No auth: it binds to loopback by default and is a test tool.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseFaultRule } from './faults.js';
import type { FaultRule, SimStats } from './types.js';

export const CONTROL_PREFIX = '/__sim/';
const MAX_BODY = 64 * 1024;

export interface ControlTarget {
  inject(rule: FaultRule): void;
  clearFaults(): void;
  reset(): void;
  stats(): SimStats;
}

function send(res: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) {
    res.writeHead(status).end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: IncomingMessage, done: (text: string | null) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  req.on('data', (c: Buffer) => {
    size += c.length;
    if (size > MAX_BODY) over = true;
    else chunks.push(c);
  });
  req.on('end', () => done(over ? null : Buffer.concat(chunks).toString('utf8')));
  req.on('error', () => done(null));
}

export function handleControl(req: IncomingMessage, res: ServerResponse, path: string, target: ControlTarget): void {
  const route = `${req.method ?? 'GET'} ${path}`;
  switch (route) {
    case 'POST /__sim/faults':
      readBody(req, (text) => {
        if (text === null) return send(res, 413, { error: 'body too large or unreadable' });
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          return send(res, 400, { error: 'body is not JSON' });
        }
        const rule = parseFaultRule(json);
        if (typeof rule === 'string') return send(res, 400, { error: rule });
        target.inject(rule);
        send(res, 204);
      });
      return;
    case 'DELETE /__sim/faults':
      target.clearFaults();
      return send(res, 204);
    case 'GET /__sim/stats':
      return send(res, 200, target.stats());
    case 'POST /__sim/reset':
      target.reset();
      return send(res, 204);
    default:
      send(res, 404, { error: `no control route ${route}` });
  }
}
