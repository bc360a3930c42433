/**
 * The constant-rate load of lib/open-loop.ts (request i due at i ÷ rate, timed from when it was
 * due), with each request numbered in an `x-seq` header and four times kept per request on
 * the monotonic clock the trace probe (trace-probe.mjs) uses in the servers: when it was due,
 * when the generator handed it to undici, when undici wrote its head to a socket (diagnostics channel `undici:client:sendHeaders`),
 * and when its answer had been read. Joined with the server's own 'request' and 'finish'
 * times, a slow answer's latency splits into: the generator late to fire it, waiting for a free connection (the
 * pool's queue: answers still out on all 64), waiting to be read
 * by the server, inside the server, and the generator late to read the answer.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { startConstantRate } from './open-loop.js';

export interface TracedRun {
  n: number;
  failed: number;
  cpuUsPerRequest: number;
  /** Per request i, monotonic µs; NaN when not known. */
  dueUs: Float64Array;
  /** When the generator handed it to undici's pool: late past `dueUs` only if the generator's loop was. */
  firedUs: Float64Array;
  sentUs: Float64Array;
  doneUs: Float64Array;
  ok: Uint8Array;
}

export async function tracedRate(o: { url: string; rate: number; durationS: number; connections: number; paths: readonly string[]; headers: Record<string, string>; serverPid: number }): Promise<TracedRun> {
  const total = Math.ceil(o.rate * o.durationS);
  const offsetUs = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000;
  const nowUs = () => offsetUs + performance.now() * 1000;
  const dueUs = new Float64Array(total);
  const firedUs = new Float64Array(total);
  const sentUs = new Float64Array(total).fill(NaN);
  const doneUs = new Float64Array(total).fill(NaN);
  const ok = new Uint8Array(total);
  const onSend = (m: unknown) => {
    const h = (m as { request: { headers: string[] } }).request.headers;
    for (let k = 0; k < h.length; k += 2) {
      if (h[k] === 'x-seq') {
        const i = Number(h[k + 1]);
        if (i >= 0 && i < total) sentUs[i] = nowUs();
        return;
      }
    }
  };
  subscribe('undici:client:sendHeaders', onSend);
  try {
    const r = await startConstantRate({
      ...o,
      seqHeader: 'x-seq',
      onFire: (i, dueMs) => {
        dueUs[i] = offsetUs + dueMs * 1000;
        firedUs[i] = nowUs();
      },
      onAnswer: (i, good) => {
        doneUs[i] = nowUs();
        ok[i] = good ? 1 : 0;
      },
    }).done;
    return { n: total, failed: r.failed, cpuUsPerRequest: r.cpuUsPerRequest, dueUs, firedUs, sentUs, doneUs, ok };
  } finally {
    unsubscribe('undici:client:sendHeaders', onSend);
  }
}
