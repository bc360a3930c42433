/**
 * The gateway's longest event-loop stall over a span, read from outside the process through its
 * own GET /metrics: prom-client's default metrics sample the loop with
 * `perf_hooks.monitorEventLoopDelay` (10 ms resolution) and reset that histogram at each scrape,
 * so `nodejs_eventloop_lag_max_seconds` from a scrape is the longest interval between two of its
 * ticks since the previous scrape. Scrape once to open a span, once to close it. An idle loop
 * reads about the resolution itself (~10 ms): hence the idle gateway as the reference.
 */
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

export interface StallProbe {
  /** Open a span (the scrape resets the gateway's histogram). */
  start(): Promise<void>;
  /** Close the span: the longest stall since start(), in ms. */
  end(): Promise<number>;
  /** The worst end() so far: the scenario's maximum over its spans. */
  readonly worst: number;
  /** Every span's reading, in order. */
  readonly spans: readonly number[];
}

export function stallProbe(gatewayUrl: string, headers: Record<string, string> = {}): StallProbe {
  let worst = 0;
  const spans: number[] = [];
  return {
    async start() {
      await scrape(gatewayUrl, headers);
    },
    async end() {
      const ms = await scrape(gatewayUrl, headers);
      worst = Math.max(worst, ms);
      spans.push(ms);
      return ms;
    },
    get worst() {
      return worst;
    },
    spans,
  };
}

/** The longest stall of an idle gateway over `ms`: what the probe reads when Tollgate does nothing. */
export async function idleStall(gatewayUrl: string, ms: number, headers: Record<string, string> = {}): Promise<number> {
  const p = stallProbe(gatewayUrl, headers);
  await p.start();
  await new Promise((r) => setTimeout(r, ms));
  return p.end();
}
