/**
 * The gateway's longest event-loop stall over a span, read from outside the process through its
 * own GET /metrics: prom-client's default metrics sample the loop with
 * `perf_hooks.monitorEventLoopDelay` (10 ms resolution) and reset that histogram at each scrape,
 * so `nodejs_eventloop_lag_max_seconds` from a scrape is the longest interval between two of its
 * ticks since the previous scrape. Scrape once to open a span, once to close it. An idle loop
 * reads about the resolution itself (~10 ms): hence the idle gateway as the reference.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'undici';

const MAX = /^nodejs_eventloop_lag_max_seconds(?:\{[^}]*\})?\s+(\S+)/m;

/** The value of nodejs_eventloop_lag_max_seconds in a Prometheus text exposition, in ms. */
export function lagMaxMs(exposition: string): number {
  const m = MAX.exec(exposition);
  if (!m) throw new Error('GET /metrics has no nodejs_eventloop_lag_max_seconds (default metrics off?)');
  return Number(m[1]) * 1000;
}

async function scrape(gatewayUrl: string, headers: Record<string, string>): Promise<number> {
  const res = await request(`${gatewayUrl}/metrics`, { headers });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`GET /metrics answered ${res.statusCode}: ${text.slice(0, 200)}`);
  return lagMaxMs(text);
}

/*
 * A bystander: a node process doing nothing but the same loop-delay probe (prom-client's:
 * monitorEventLoopDelay at 10 ms resolution, reset at each read), read over the same spans as
 * the gateway. On a shared machine a process may not run for tens of milliseconds; what the
 * bystander reads over a span is that share of the gateway's reading, and not Tollgate's work.
 */
const BYSTANDER = `
const { monitorEventLoopDelay } = require('node:perf_hooks');
const h = monitorEventLoopDelay({ resolution: 10 });
h.enable();
let buf = '';
process.stdin.on('data', (c) => {
  buf += c;
  let i;
  while ((i = buf.indexOf('\\n')) >= 0) {
    const cmd = buf.slice(0, i);
    buf = buf.slice(i + 1);
    if (cmd === 'm') process.stdout.write(String(h.max / 1e6) + '\\n');
    h.reset();
  }
});
`;

let bystander: { proc: ChildProcess; ask(cmd: 'r' | 'm'): Promise<number> } | null = null;

function theBystander(): NonNullable<typeof bystander> {
  if (bystander) return bystander;
  const proc = spawn(process.execPath, ['-e', BYSTANDER], { stdio: ['pipe', 'pipe', 'inherit'] });
  proc.unref();
  (proc.stdin as unknown as { unref?: () => void }).unref?.();
  (proc.stdout as unknown as { unref?: () => void }).unref?.();
  const waiting: Array<(ms: number) => void> = [];
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
    let i;
    while ((i = out.indexOf('\n')) >= 0) {
      const line = out.slice(0, i);
      out = out.slice(i + 1);
      waiting.shift()?.(Number(line));
    }
  });
  const b = {
    proc,
    ask(cmd: 'r' | 'm'): Promise<number> {
      proc.stdin!.write(cmd + '\n');
      if (cmd === 'r') return Promise.resolve(0);
      return new Promise<number>((resolve) => waiting.push(resolve));
    },
  };
  bystander = b;
  return b;
}

/** End the bystander process (the benchmark's end; it is unref'd and never keeps the process alive anyway). */
export function stopBystander(): void {
  bystander?.proc.kill();
  bystander = null;
}

export interface StallProbe {
  /** Open a span (the scrape resets the gateway's histogram). */
  start(): Promise<void>;
  /** Close the span: the longest stall since start(), in ms. */
  end(): Promise<number>;
  /** The worst end() so far: the scenario's maximum over its spans. */
  readonly worst: number;
  /** Every span's reading, in order. */
  readonly spans: readonly number[];
  /** The bystander's reading over each span, and the worst of them: the machine's share. */
  readonly bystanderSpans: readonly number[];
  readonly bystanderWorst: number;
}

/** Two ticks of monitorEventLoopDelay's 10 ms timer (prom-client's default and the anchors'). */
const HISTOGRAM_SETTLE_MS = 25;

/**
 * `withBystander: false` for a probe read over the same spans as another one that has it (an
 * anchor's own loop beside the gateway's): the bystander's histogram is reset at each read, so
 * two probes asking it at once would each read part of the span. Its bystander figures are then 0.
 */
export function stallProbe(gatewayUrl: string, headers: Record<string, string> = {}, withBystander = true): StallProbe {
  let worst = 0;
  const spans: number[] = [];
  const bystanderSpans: number[] = [];
  const b = withBystander ? theBystander() : { ask: () => Promise.resolve(0) };
  return {
    async start() {
      await Promise.all([scrape(gatewayUrl, headers), b.ask('r')]);
      // The reset also forgets when the histogram's timer last ran, so a stall that begins
      // before its next tick (10 ms) is not recorded at all: a 150 ms stall read as 0 or ~10 ms
      // (a test of an anchor's probe failed so under load). The span begins once it has ticked.
      await new Promise((r) => setTimeout(r, HISTOGRAM_SETTLE_MS));
    },
    async end() {
      const [ms, other] = await Promise.all([scrape(gatewayUrl, headers), b.ask('m')]);
      worst = Math.max(worst, ms);
      spans.push(ms);
      bystanderSpans.push(other);
      return ms;
    },
    get worst() {
      return worst;
    },
    spans,
    bystanderSpans,
    get bystanderWorst() {
      return Math.max(0, ...bystanderSpans);
    },
  };
}

/** The longest stall of an idle gateway over `ms`: what the probe reads when Tollgate does nothing. */
export async function idleStall(gatewayUrl: string, ms: number, headers: Record<string, string> = {}): Promise<number> {
  return (await idleStallWithBystander(gatewayUrl, ms, headers)).gateway;
}

/** As idleStall, with the bystander's reading over the same span. */
export async function idleStallWithBystander(gatewayUrl: string, ms: number, headers: Record<string, string> = {}): Promise<{ gateway: number; bystander: number }> {
  const p = stallProbe(gatewayUrl, headers);
  await p.start();
  await new Promise((r) => setTimeout(r, ms));
  const gateway = await p.end();
  return { gateway, bystander: p.bystanderWorst };
}
