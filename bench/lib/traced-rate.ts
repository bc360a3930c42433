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
import { Pool } from 'undici';
import { cpuSeconds } from './procs.js';

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
  const dueUs = new Float64Array(total);
  const firedUs = new Float64Array(total);
  const sentUs = new Float64Array(total).fill(NaN);
  const doneUs = new Float64Array(total).fill(NaN);
  const ok = new Uint8Array(total);
  const base = 0;
  const onSend = (m: unknown) => {
    const h = (m as { request: { headers: string[] } }).request.headers;
    for (let k = 0; k < h.length; k += 2) {
      if (h[k] === 'x-seq') {
        const i = Number(h[k + 1]) - base;
        if (i >= 0 && i < total) sentUs[i] = offsetUs + performance.now() * 1000;
        return;
      }
    }
  };
  subscribe('undici:client:sendHeaders', onSend);
  const pool = new Pool(o.url, { connections: o.connections, pipelining: 1, headersTimeout: 30_000, bodyTimeout: 30_000 });
  const interval = 1000 / o.rate;
  const srv0 = cpuSeconds(o.serverPid);
  const t0 = performance.now() + 2;
  let sent = 0;
  let answered = 0;
  let allAnswered: () => void = () => {};
  const answeredAll = new Promise<void>((r) => (allAnswered = r));
  const record = (i: number, good: boolean) => {
    doneUs[i] = offsetUs + performance.now() * 1000;
    ok[i] = good ? 1 : 0;
    if (++answered === total) allAnswered();
  };
  const fire = (i: number) => {
    dueUs[i] = offsetUs + (t0 + i * interval) * 1000;
    firedUs[i] = offsetUs + performance.now() * 1000;
    pool.request({ method: 'GET', path: o.paths[i % o.paths.length]!, headers: { 'x-seq': String(base + i), ...o.headers } }).then(
      async (res) => {
        await res.body.dump();
        record(i, res.statusCode >= 200 && res.statusCode < 300);
      },
      () => record(i, false),
    );
  };
  const tick = () => {
    const upTo = Math.min(total, Math.max(0, Math.floor((performance.now() - t0) / interval) + 1));
    while (sent < upTo) fire(sent++);
    if (sent < total) setTimeout(tick, 1);
  };
  tick();
  await answeredAll;
  const srv = cpuSeconds(o.serverPid) - srv0;
  unsubscribe('undici:client:sendHeaders', onSend);
  await pool.close();
  let good = 0;
  for (let i = 0; i < total; i++) good += ok[i]!;
  return { n: total, failed: total - good, cpuUsPerRequest: (srv * 1e6) / Math.max(1, good), dueUs, firedUs, sentUs, doneUs, ok };
}
