/**
 * 3. Herd: N concurrent identical misses must make one provider call (coalescing). The
 * provider is slowed to PROVIDER_MS so that all N are in flight while the first call runs.
 */
import { Pool, request } from 'undici';
import { progress } from './lib/log.js';
import type { Section } from './lib/report.js';
import { fmt } from './lib/stats.js';
import { entityId, startStack } from './lib/stack.js';

const SIZES = [10, 100, 1000] as const;
const STRATEGIES = ['cached', 'fetch'] as const;
const PROVIDER_MS = 200;
const KIND_ORDER = ['led', 'joined', 'hit'];

interface Herd {
  n: number;
  strategy: string;
  calls: number;
  statuses: Record<string, number>;
  kinds: Record<string, number>;
  ms: number;
}

const count = (m: Record<string, number>, k: string) => void (m[k] = (m[k] ?? 0) + 1);

async function simCalls(simUrl: string): Promise<number> {
  const res = await request(`${simUrl}/__sim/stats`);
  return ((await res.body.json()) as { calls: number }).calls;
}

async function herd(gwUrl: string, simUrl: string, auth: Record<string, string>, n: number, strategy: string, entity: number): Promise<Herd> {
  const pool = new Pool(gwUrl, { connections: n, pipelining: 1 });
  try {
    // Open all N connections first, so the herd itself is N requests, not N handshakes.
    await Promise.all(Array.from({ length: n }, () => pool.request({ method: 'GET', path: '/healthz' }).then((r) => r.body.dump())));
    const before = await simCalls(simUrl);
    const path = `/v1/profile?person.id=${entityId(entity)}&strategy=${strategy}`;
    const t0 = performance.now();
    const replies = await Promise.all(
      Array.from({ length: n }, async () => {
        const r = await pool.request({ method: 'GET', path, headers: auth });
        await r.body.dump();
        return { status: r.statusCode, cache: String(r.headers['cache-status'] ?? '') };
      }),
    );
    const ms = performance.now() - t0;
    const statuses: Record<string, number> = {};
    const kinds: Record<string, number> = {};
    for (const r of replies) {
      count(statuses, String(r.status));
      count(kinds, r.cache.includes('collapsed') ? 'joined' : r.cache.includes('; hit') ? 'hit' : 'led');
    }
    return { n, strategy, calls: (await simCalls(simUrl)) - before, statuses, kinds, ms };
  } finally {
    await pool.close();
  }
}

export async function herdBench(): Promise<Section> {
  const stack = await startStack();
  try {
    const fault = { fault: { kind: 'latency', ms: PROVIDER_MS }, path: '/v1/profile' };
    const res = await request(`${stack.sim.url}/__sim/faults`, { method: 'POST', body: JSON.stringify(fault), headers: { 'content-type': 'application/json' } });
    if (res.statusCode !== 204) throw new Error(`could not slow the simulator: ${await res.body.text()}`);
    await res.body.dump();
    const results: Herd[] = [];
    let entity = 2_000_000;
    for (const strategy of STRATEGIES) {
      for (const n of SIZES) {
        progress(`herd: ${n} × ${strategy}`);
        results.push(await herd(stack.gw.url, stack.sim.url, stack.auth, n, strategy, entity++));
      }
    }
    const ok = (h: Herd) => h.calls === 1 && h.statuses['200'] === h.n;
    const fmtMap = (m: Record<string, number>) =>
      Object.entries(m)
        .sort(([a], [b]) => KIND_ORDER.indexOf(a) - KIND_ORDER.indexOf(b) || a.localeCompare(b))
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
    return {
      id: 'herd',
      title: '3. Herd',
      figures: results
        .filter((h) => h.strategy === 'cached')
        .map((h) => ({
          figure: `Provider calls for ${fmt.int(h.n)} concurrent identical misses`,
          measured: String(h.calls),
          baseline: `${h.n} without coalescing`,
          ratio: null,
          target: '1',
          pass: ok(h),
        })),
      details: [
        `Method: simulator and \`tollgate serve\` in child processes; the simulator answers \`/v1/profile\` after ${PROVIDER_MS} ms (a latency`,
        `fault), so the herd arrives while the first provider call is in flight. For each N a pool first opens N keep-alive`,
        `connections (\`GET /healthz\`), then sends N identical \`GET /v1/profile?person.id=X&strategy=S\` at once, X a new entity each`,
        `time; provider calls are read from the simulator's \`/__sim/stats\`. "led" answered the provider call, "joined" shared it`,
        `(\`Cache-Status: …; collapsed\`), "hit" arrived after it was stored.`,
        '',
        '| Strategy | N | Provider calls | Statuses | Answers | Wall time |',
        '|---|---:|---:|---|---|---:|',
        ...results.map((h) => `| ${h.strategy} | ${fmt.int(h.n)} | ${h.calls}${ok(h) ? '' : ' **(fail)**'} | ${fmtMap(h.statuses)} | ${fmtMap(h.kinds)} | ${fmt.ms(h.ms)} |`),
      ].join('\n'),
    };
  } finally {
    await stack.close();
  }
}
