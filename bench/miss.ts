/**
 * 2. Miss path: the latency Tollgate adds to a cache miss, over calling the provider
 * (simulator) directly, one request at a time so that queueing does not blur it.
 */
import { request } from 'undici';
import { runLoad, type LoadResult } from './lib/load.js';
import { progress } from './lib/log.js';
import type { Section } from './lib/report.js';
import { fmt, median } from './lib/stats.js';
import { entityPath, SIM_KEY, startStack } from './lib/stack.js';

const ROUNDS = 3;
const PER_ROUND = 1500;
const WARMUP = 500;

export async function missBench(): Promise<Section> {
  const stack = await startStack();
  try {
    // Every request names an entity nobody asked for before: a miss at Tollgate and a fresh
    // fetch at the simulator, whichever way it is sent, so the provider does the same work.
    let next = 1_000_000;
    const fresh = (count: number) => () => Array.from({ length: count }, () => entityPath(next++));
    const direct: { url: string; serverPid: number; headers: Record<string, string> } = {
      url: stack.sim.url,
      serverPid: stack.sim.pid,
      headers: { authorization: `Bearer ${SIM_KEY}` },
    };
    const gateway = { url: stack.gw.url, serverPid: stack.gw.pid, headers: stack.auth };
    const one = (o: typeof direct, n: number) => runLoad({ ...o, connections: 1, durationS: 0, amount: n, pathsFor: fresh(n) });
    await one(direct, WARMUP);
    await one(gateway, WARMUP);
    const callsBefore = await simCalls(stack.sim.url);
    const runs: Array<{ d: LoadResult; g: LoadResult }> = [];
    for (let i = 0; i < ROUNDS; i++) {
      progress(`miss: round ${i + 1}/${ROUNDS}`);
      runs.push({ d: await one(direct, PER_ROUND), g: await one(gateway, PER_ROUND) });
    }
    const calls = (await simCalls(stack.sim.url)) - callsBefore;
    const failures = runs.reduce((a, r) => a + r.g.non2xx + r.g.errors + r.d.non2xx + r.d.errors, 0);
    const d50 = median(runs.map((r) => r.d.p50));
    const g50 = median(runs.map((r) => r.g.p50));
    const added = g50 - d50;
    const d99 = median(runs.map((r) => r.d.p99));
    const g99 = median(runs.map((r) => r.g.p99));
    const row = (r: LoadResult) => `p50 ${fmt.ms(r.p50)}, p99 ${fmt.ms(r.p99)}, mean ${fmt.ms(r.mean)}`;
    return {
      id: 'miss',
      title: '2. Miss path',
      figures: [
        { figure: 'Median latency added to a miss', measured: fmt.ms(added), baseline: `${fmt.ms(d50)} direct → ${fmt.ms(g50)} via Tollgate`, ratio: null, target: '≤ 1 ms', pass: added <= 1 && failures === 0 },
        { figure: 'p99 latency added to a miss', measured: fmt.ms(g99 - d99), baseline: `${fmt.ms(d99)} direct → ${fmt.ms(g99)} via Tollgate`, ratio: null, target: '—', pass: null },
      ],
      details: [
        `Method: simulator and \`tollgate serve\` in separate child processes, simulator latency 0. One connection, one request at a time`,
        `(autocannon, per-response latency). Each request is \`GET /v1/profile?person.id=N\` with an N never requested before, so Tollgate`,
        `misses (\`strategy=cached\`, no entry: provider call, store, answer) and the simulator builds a fresh profile either way. ${WARMUP} warm-up`,
        `requests per path, then ${ROUNDS} rounds of ${PER_ROUND} direct and ${PER_ROUND} through Tollgate, alternated; medians of the rounds' percentiles.`,
        `The simulator saw ${fmt.int(calls)} provider calls for ${fmt.int(ROUNDS * PER_ROUND * 2)} measured requests (one per request either way).`,
        '',
        '| Round | Direct to the simulator | Through Tollgate (miss) |',
        '|---|---|---|',
        ...runs.map((r, i) => `| ${i + 1} | ${row(r.d)} | ${row(r.g)} |`),
        '',
        failures ? `**${failures} requests failed.**` : 'Every answer was a 200.',
      ].join('\n'),
    };
  } finally {
    await stack.close();
  }
}

async function simCalls(simUrl: string): Promise<number> {
  const res = await request(`${simUrl}/__sim/stats`);
  return ((await res.body.json()) as { calls: number }).calls;
}
