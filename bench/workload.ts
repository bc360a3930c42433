/**
 * 5. Workload: a replayed, seeded Zipf(1.1) stream over 10k entities with a strategy mix,
 * spread over 30 simulated days. Gateway and simulator run in this process on one shared
 * FakeClock, so TTLs and maxage see time pass; credits come from the simulator's meter.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { distApp, distClock, distConfig, distSimulator } from './lib/dist.js';
import { idealCosts, type Strategy, type StreamRequest } from './lib/ideal.js';
import { progress } from './lib/log.js';
import { exponential, rng, zipf } from './lib/random.js';
import type { Section } from './lib/report.js';
import { fmt } from './lib/stats.js';
import { entityId, SIM_KEY } from './lib/stack.js';

const REQUESTS = 100_000;
const ENTITIES = 10_000;
const ZIPF_S = 1.1;
const SPAN_MS = 30 * 86_400_000;
const MIX: ReadonlyArray<readonly [Strategy, number]> = [
  ['cached', 0.7],
  ['strict', 0.15],
  ['besteffort', 0.1],
  ['fetch', 0.05],
];
/** maxage for strict/besteffort, drawn uniformly: an hour, a day, a week, 30 days. */
const MAXAGES = [3_600, 86_400, 7 * 86_400, 30 * 86_400] as const;
const SEED = 20_260_101;

export function workloadStream(start: number): StreamRequest[] {
  const r = rng(SEED);
  const rank = zipf(ENTITIES, ZIPF_S, r);
  const out: StreamRequest[] = [];
  let t = start;
  for (let i = 0; i < REQUESTS; i++) {
    t += exponential(SPAN_MS / REQUESTS, r);
    const entity = rank() - 1;
    let u = r();
    const strategy = MIX.find(([, p]) => (u -= p) < 0)?.[0] ?? 'cached';
    const maxage = strategy === 'strict' || strategy === 'besteffort' ? MAXAGES[Math.floor(r() * MAXAGES.length)]! : null;
    out.push({ t: Math.round(t), entity, strategy, maxage });
  }
  return out;
}

interface Tally {
  requests: number;
  credits: number;
  hits: number;
  ideal: number;
  idealFree: number;
  ttlIdeal: number;
}

export async function workloadBench(): Promise<Section> {
  const { FakeClock } = await distClock();
  const { startSimulator, DEFAULT_CREDITS } = await distSimulator();
  const { createApp } = await distApp();
  const { validateConfig } = await distConfig();
  const clock = new FakeClock();
  const stream = workloadStream(clock.now());
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-workload-'));
  const sim = await startSimulator({ apiKey: SIM_KEY, clock });
  const config = validateConfig({
    dataDir: dir,
    logLevel: 'info',
    server: { host: '127.0.0.1', port: 0 },
    upstream: { url: sim.url, apiKey: SIM_KEY },
  });
  const app = createApp(config, { clock, logDestination: { write: () => {} } });
  const pool = new Pool(await app.listen(), { connections: 1 });
  try {
    const auth = { authorization: `Bearer ${app.keys.create({ name: 'bench' }).secret}` };
    const prices = { fresh: DEFAULT_CREDITS.fresh.profile, cached: DEFAULT_CREDITS.cached };
    const ideal = idealCosts(stream, prices, null);
    const ttlIdeal = idealCosts(stream, prices, config.cache.ttl.profile * 1000);
    const by = new Map<string, Tally>();
    const statuses = new Map<string, number>();
    const t0 = performance.now();
    for (let i = 0; i < stream.length; i++) {
      const q = stream[i]!;
      clock.set(q.t);
      const maxage = q.maxage === null ? '' : `&maxage=${q.maxage}`;
      const res = await pool.request({ method: 'GET', path: `/v1/profile?person.id=${entityId(q.entity)}&strategy=${q.strategy}${maxage}`, headers: auth });
      const body = await res.body.text();
      const cache = String(res.headers['x-cache-status'] ?? '');
      statuses.set(`${res.statusCode} ${cache}`, (statuses.get(`${res.statusCode} ${cache}`) ?? 0) + 1);
      const credits = Number(/"credits_used":(\d+)/.exec(body)?.[1] ?? 0);
      for (const key of [q.strategy, 'all']) {
        const a = by.get(key) ?? { requests: 0, credits: 0, hits: 0, ideal: 0, idealFree: 0, ttlIdeal: 0 };
        a.requests++;
        a.credits += credits;
        a.hits += cache === 'HIT' ? 1 : 0;
        a.ideal += ideal[i]!;
        a.idealFree += ideal[i] === 0 ? 1 : 0;
        a.ttlIdeal += ttlIdeal[i]!;
        by.set(key, a);
      }
      if ((i + 1) % 25_000 === 0) progress(`workload: ${i + 1} requests replayed`);
    }
    const wallS = (performance.now() - t0) / 1000;
    const all = by.get('all')!;
    const charged = sim.creditsCharged();
    const ratio = charged / all.ideal;
    const row = (name: string, a: Tally) =>
      `| ${name} | ${fmt.int(a.requests)} | ${fmt.int(a.credits)} | ${fmt.int(a.ideal)} | ${fmt.int(a.ttlIdeal)} | ${(a.credits / a.ideal).toFixed(2)} | ${fmt.pct(a.hits / a.requests)} | ${fmt.pct(a.idealFree / a.requests)} |`;
    return {
      id: 'workload',
      title: '5. Workload',
      figures: [
        { figure: 'Credits spent (simulator meter) vs minimum possible', measured: fmt.int(charged), baseline: fmt.int(all.ideal), ratio, target: '—', pass: null },
        { figure: 'Hit ratio (answered from the cache)', measured: fmt.pct(all.hits / all.requests), baseline: `${fmt.pct(all.idealFree / all.requests)} free at the minimum`, ratio: all.hits / all.idealFree, target: '—', pass: null },
      ],
      details: [
        `Stream (seed ${SEED}): ${fmt.int(REQUESTS)} \`GET /v1/profile?person.id=…\` over ${fmt.int(ENTITIES)} entities drawn Zipf(${ZIPF_S}), Poisson arrivals`,
        `over ${SPAN_MS / 86_400_000} simulated days; strategies ${MIX.map(([s, p]) => `${s} ${p * 100}%`).join(', ')}; \`maxage\` for strict/besteffort`,
        `uniform over ${MAXAGES.map((m) => `${m} s`).join(', ')}. Gateway (\`createApp\` from dist, default cache settings: profile TTL`,
        `${config.cache.ttl.profile / 86_400} days) and simulator in this process on one FakeClock set to each request's time; requests one at a time.`,
        `Prices: fresh ${prices.fresh}, provider-cached ${prices.cached} credits. Replay took ${wallS.toFixed(1)} s.`,
        '',
        'Minimum possible (per entity, F = time of its last fresh fetch): `fetch` pays a fresh fetch; `cached` pays only when no data',
        'exists yet; `strict`/`besteffort` with maxage M pay a fresh fetch only when t − F > M; every payment sets F = t. The',
        '"minimum under cache.ttl" column also charges a `cached` request whose newest stored answer is older than the TTL the',
        'provider-cache price (Tollgate must forward it): the gap between the two minimums is the cost of the TTL setting,',
        'the rest is the cost of what Tollgate knows (e.g. an answer from the provider\'s cache has unknown freshness).',
        '',
        '| Strategy | Requests | Credits spent | Minimum | Minimum under cache.ttl | Spent ÷ minimum | Hit ratio | Free at the minimum |',
        '|---|---:|---:|---:|---:|---:|---:|---:|',
        ...MIX.map(([s]) => row(s, by.get(s)!)),
        row('**all**', all),
        '',
        `Simulator meter: ${fmt.int(charged)} credits in ${fmt.int(sim.callCount())} provider calls (the per-request \`meta.credits_used\` sums to ${fmt.int(all.credits)}).`,
        `Answers: ${[...statuses].map(([k, v]) => `${k || 'none'} ${fmt.int(v)}`).join(', ')}.`,
      ].join('\n'),
    };
  } finally {
    await pool.close();
    await app.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
