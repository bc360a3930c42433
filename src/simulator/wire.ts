/**
 * Putting answers on the wire, including the faults that live at the HTTP level (delays,
 * split bodies, oversized or broken bodies). Every timer is owned by `Timers` and tied to
 * its response, so neither an aborted client nor close() can leave one behind.
 */
import type { ServerResponse } from 'node:http';
import { deflateSync, gzipSync } from 'node:zlib';
import type { Answer } from './handler.js';
import type { Fault } from './types.js';

export class Timers {
  private readonly pending = new Set<NodeJS.Timeout>();

  /** Run `fn` after `ms` unless `res` closes first (client gone, or close()). */
  after(ms: number, res: ServerResponse, fn: () => void): void {
    const t = setTimeout(() => {
      this.pending.delete(t);
      res.off('close', cancel);
      fn();
    }, ms);
    const cancel = (): void => {
      clearTimeout(t);
      this.pending.delete(t);
    };
    this.pending.add(t);
    res.once('close', cancel);
  }

  clearAll(): void {
    for (const t of this.pending) clearTimeout(t);
    this.pending.clear();
  }

  get size(): number {
    return this.pending.size;
  }
}

/** Answers that replace normal processing; undefined for faults that wrap a normal answer. */
export function replacementBody(fault: Fault, requestId: string): string | undefined {
  if (fault.kind === 'malformed') {
    // Truncated JSON: the most common real-world shape of a broken 200.
    return `{"request_id":"${requestId}","data":{"first_name":"Ad`;
  }
  if (fault.kind === 'bad-envelope') {
    return JSON.stringify({ request_id: requestId, result: { status: 'ok' }, credits: 1 });
  }
  return undefined;
}

/** A 2xx envelope without `meta.credits_used`: what it charged goes unsaid. */
export function withoutCreditsUsed(answer: Answer): Answer {
  if (typeof answer.body === 'string' || answer.status >= 300) return answer;
  const { credits_used: _unsaid, ...meta } = answer.body.meta as Record<string, unknown>;
  return { ...answer, body: { ...answer.body, meta } };
}

/** An error answer the provider billed: `meta.credits_used` beside its `error`, and counted charged. */
export function chargedError(answer: Answer, credits: number | undefined): Answer {
  if (credits === undefined || typeof answer.body === 'string') return answer;
  return { ...answer, body: { ...answer.body, meta: { credits_used: credits } }, credits };
}

/** Pads a valid 2xx envelope to about `bytes` with a field clients must ignore. */
export function padded(answer: Answer, bytes: number): Answer {
  if (typeof answer.body === 'string' || answer.status >= 300) return answer;
  const data = answer.body.data as Record<string, unknown>;
  const base = Buffer.byteLength(JSON.stringify(answer.body));
  const fill = Math.max(0, bytes - base - '"_padding":"",'.length);
  return { ...answer, body: { ...answer.body, data: { ...data, _padding: 'x'.repeat(fill) } } };
}

export interface WriteOptions {
  delayMs: number;
  /** Send headers and part of the body, finish after this many ms. */
  slowBodyMs?: number;
  /** Send headers and part of the body, then destroy the connection. */
  cutBody?: boolean;
  /** Content-Encoding of the body, and whether it goes chunked (no Content-Length). */
  encoded?: { coding: 'gzip' | 'deflate' | 'identity'; chunked?: boolean } | undefined;
  timers: Timers;
}

export function writeAnswer(res: ServerResponse, answer: Answer, baseHeaders: Record<string, string>, o: WriteOptions): void {
  const go = (): void => {
    if (res.destroyed) return;
    const plain = Buffer.from(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
    const coding = o.encoded?.coding ?? 'identity';
    const body = coding === 'gzip' ? gzipSync(plain) : coding === 'deflate' ? deflateSync(plain) : plain;
    res.writeHead(answer.status, {
      ...baseHeaders,
      ...answer.headers,
      'Content-Type': 'application/json; charset=utf-8',
      ...(coding === 'identity' ? {} : { 'Content-Encoding': coding }),
      ...(o.encoded?.chunked ? {} : { 'Content-Length': String(body.length) }),
    });
    if (o.encoded?.chunked) {
      // Several chunks, the last in a later turn: a reader must not take the first for the whole.
      const third = Math.max(1, Math.floor(body.length / 3));
      res.write(body.subarray(0, third));
      res.write(body.subarray(third, 2 * third));
      o.timers.after(5, res, () => res.end(body.subarray(2 * third)));
      return;
    }
    if (o.cutBody) {
      res.write(body.subarray(0, Math.max(1, Math.floor(body.length / 2))));
      o.timers.after(5, res, () => res.socket?.destroy());
      return;
    }
    if (o.slowBodyMs === undefined) {
      res.end(body);
      return;
    }
    const cut = Math.max(1, Math.floor(body.length / 2));
    res.write(body.subarray(0, cut));
    o.timers.after(o.slowBodyMs, res, () => res.end(body.subarray(cut)));
  };
  if (o.delayMs > 0) o.timers.after(o.delayMs, res, go);
  else go();
}
