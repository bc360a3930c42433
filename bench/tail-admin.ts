/**
 * The tail benchmark's admin scenario: hit latency while GET /admin/usage reads a ledger of
 * more than a million rows. A gateway over bench/ledger.ts's ledger serves a constant-rate hit
 * load; the slowest hit in flight during each report is compared with the slowest in a quiet
 * window of the same load just before, and the gateway's event-loop stall is read over each.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { fillThroughGateway, randomPaths } from './hit.js';
import { fillLedger } from './ledger.js';
import { SETTINGS } from './lib/load.js';
import { progress } from './lib/log.js';
import { startConstantRate, type Latencies } from './lib/open-loop.js';
import { stallProbe } from './lib/stall.js';
import { startStack } from './lib/stack.js';
import { fmt } from './lib/stats.js';

const TOKEN = 'bench-admin-token-0123456789';
const QUIET_MS = 6_000;
const DAY = 86_400_000;

export interface AdminWindow {
  name: string;
  tookMs: number;
  hits: Latencies;
  stallMs: number;
  /** An idle bystander process's loop-delay reading over the same window (lib/stall.ts). */
  bystanderMs: number;
  detail: string;
}

export interface AdminResult {
  rows: number;
  fillS: number;
  rate: number;
  quiet: AdminWindow;
  reports: AdminWindow[];
  failures: number;
  generatorStallMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function adminUsageUnderLoad(rate: number, entities: number): Promise<AdminResult> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-tail-admin-'));
  try {
    const now = Date.now();
    const t0 = performance.now();
    const rows = await fillLedger(dir, now);
    const fillS = (performance.now() - t0) / 1000;
    progress(`tail: ledger of ${fmt.int(rows)} rows filled in ${fillS.toFixed(1)} s`);
    const configFile = join(dir, 'bench.yaml');
    writeFileSync(configFile, `adminToken: ${TOKEN}\n`);
    const stack = await startStack({ dir, configFile });
    try {
      await fillThroughGateway(stack.gw.url, stack.auth, entities);
      const stall = stallProbe(stack.gw.url);
      const load = startConstantRate({
        url: stack.gw.url,
        rate,
        durationS: 300,
        connections: SETTINGS.connections,
        paths: randomPaths(entities, 20_000)(0),
        headers: stack.auth,
        serverPid: stack.gw.pid,
      });
      const spans: Array<{ name: string; from: number; to: number; stallMs: number; bystanderMs?: number; detail: string }> = [];
      try {
        await sleep(2_000);
        await stall.start();
        const qFrom = performance.now();
        await sleep(QUIET_MS);
        const qTo = performance.now();
        spans.push({ name: 'none (the same load, just before)', from: qFrom, to: qTo, stallMs: await stall.end(), bystanderMs: stall.bystanderSpans.at(-1), detail: 'no admin work' });
        const from = new Date(now - 200 * DAY).toISOString().slice(0, 10);
        for (const by of ['key', 'day'] as const) {
          await sleep(1_000);
          progress(`tail: GET /admin/usage?by=${by} under a hit load of ${Math.round(rate)}/s`);
          await stall.start();
          const a = performance.now();
          const res = await request(`${stack.gw.url}/admin/usage?by=${by}&from=${from}`, { headers: { authorization: `Bearer ${TOKEN}` } });
          const body = (await res.body.json()) as { rows?: Array<{ requests: number }> };
          const b = performance.now();
          if (res.statusCode !== 200 || !body.rows) throw new Error(`usage answered ${res.statusCode}: ${JSON.stringify(body).slice(0, 300)}`);
          const total = body.rows.reduce((s, r) => s + r.requests, 0);
          if (total < rows) throw new Error(`usage counted ${total} requests, the ledger holds at least ${rows}`);
          spans.push({ name: `GET /admin/usage?by=${by}`, from: a, to: b, stallMs: await stall.end(), bystanderMs: stall.bystanderSpans.at(-1), detail: `${body.rows.length} rows, ${fmt.int(total)} requests counted` });
        }
        await sleep(1_000);
      } finally {
        load.stop();
      }
      const r = await load.done;
      const windows = spans.map((s) => ({ name: s.name, tookMs: s.to - s.from, hits: r.during(s.from, s.to), stallMs: s.stallMs, bystanderMs: s.bystanderMs ?? 0, detail: s.detail }));
      return { rows, fillS, rate, quiet: windows[0]!, reports: windows.slice(1), failures: r.failed, generatorStallMs: r.generatorStallMs };
    } finally {
      await stack.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
