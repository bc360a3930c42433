/**
 * 8. Replicas (issue 13): the shared backend (PostgreSQL + Redis) against the embedded one
 * (SQLite) in the same run — hit throughput of one replica, miss overhead over the provider,
 * a herd spread over three replicas, and a rate limit enforced across three replicas.
 */
import { fillThroughGateway, HIT_ENTITIES } from './hit.js';
import { SETTINGS, type LoadResult } from './lib/load.js';
import { progress } from './lib/log.js';
import { startMissAnchor } from './lib/procs.js';
import { herd, measureHits, measureMisses, measureRate, missMedians, MISS_PATHS, type Herd, type HitRun, type HitSubject, type MissRound } from './lib/replica-measures.js';
import { BUDGET, REPLICAS, setProviderLatency, simCalls, startRig } from './lib/replica-rig.js';
import type { Section } from './lib/report.js';
import { fmt } from './lib/stats.js';
import { entityPath, getAll, SIM_KEY } from './lib/stack.js';

const HIT_ROUNDS = 2;
const HIT_S = 5;
const MISS_LATENCY_MS = 10;
const MISS_ROUNDS = 3;
const MISS_PER_ROUND = 150;
const MISS_WARMUP = 50;
const HERD_N = 64;
const HERDS = 3;
const HERD_LATENCY_MS = 200;
const RATE_LIMIT = 500;
const RATE_S = 4;
const RATE_CONNECTIONS = 64;

const best = (runs: readonly HitRun[]) => runs.reduce((a, x) => (x.rps > a.rps ? x : a));
const hitRow = (name: string, r: HitRun) =>
  `| ${name} | ${fmt.int(r.rps)} req/s | ${fmt.ms(r.p50)} | ${fmt.ms(r.p99)} | ${r.serverCores.toFixed(2)} | ${r.cpuUsPerRequest.toFixed(0)} µs | ${r.redisUs.toFixed(1)} µs | ${r.postgresUs.toFixed(1)} µs | ${r.generatorCores.toFixed(2)} | ${r.non2xx + r.errors} |`;
const missRow = (r: LoadResult) => `p50 ${fmt.ms(r.p50)}, p99 ${fmt.ms(r.p99)}`;
const missFailuresOf = (rounds: readonly MissRound[]) => rounds.reduce((a, r) => a + MISS_PATHS.reduce((b, p) => b + r[p].non2xx + r[p].errors, 0), 0);
const kindsOf = (h: Herd) => ['led', 'joined', 'hit'].filter((k) => h.kinds[k]).map((k) => `${k} ${h.kinds[k]}`).join(', ');
const statusesOf = (m: Record<string, number>) => Object.entries(m).map(([s, c]) => `${s}: ${fmt.int(c)}`).join(', ');

export async function replicasBench(): Promise<Section> {
  const rig = await startRig();
  try {
    const [emb, r0] = [rig.embedded, rig.replicas[0]!];
    await fillThroughGateway(emb.url, rig.embeddedKeys.plain, HIT_ENTITIES);
    await fillThroughGateway(r0.url, rig.sharedKeys.plain, HIT_ENTITIES);
    for (const [url, auth] of [[emb.url, rig.embeddedKeys.budget], [r0.url, rig.sharedKeys.budget]] as const) {
      const [hit] = await getAll(url, [entityPath(0)], auth);
      if (hit!.headers['x-cache-status'] !== 'HIT' || !hit!.headers['x-credits-remaining']) throw new Error(`expected a hit with X-Credits-*, got ${JSON.stringify(hit!.headers)}`);
    }
    progress(`replicas: ${HIT_ENTITIES} entities cached on both backends`);

    // 1. Hits: each backend with each key, alternated; the best round of each is kept.
    const subjects: HitSubject[] = [
      { name: 'Embedded, key without budget', url: emb.url, serverPid: emb.pid, headers: rig.embeddedKeys.plain },
      { name: 'Shared replica, key without budget', url: r0.url, serverPid: r0.pid, headers: rig.sharedKeys.plain },
      { name: 'Embedded, key with a credit budget', url: emb.url, serverPid: emb.pid, headers: rig.embeddedKeys.budget },
      { name: 'Shared replica, key with a credit budget', url: r0.url, serverPid: r0.pid, headers: rig.sharedKeys.budget },
    ];
    const callsBeforeHits = await simCalls(rig.sim.url);
    const hitRuns = await measureHits(rig, subjects, HIT_ROUNDS, HIT_S);
    const hitCalls = (await simCalls(rig.sim.url)) - callsBeforeHits;
    const [ep, sp, eb, sb] = hitRuns.map(best) as [HitRun, HitRun, HitRun, HitRun];
    const hitFailures = hitRuns.flat().reduce((a, r) => a + r.non2xx + r.errors, 0);
    const plainRatio = sp.rps / ep.rps;

    // 2. Misses, one at a time, against the provider called directly and the two anchors.
    const forward = await startMissAnchor(rig.sim.url, SIM_KEY);
    const anchor = await startMissAnchor(rig.sim.url, SIM_KEY, {
      databaseUrl: rig.store.env.TOLLGATE_DATABASE_URL!,
      redisUrl: rig.store.env.TOLLGATE_REDIS_URL!,
      redisPrefix: `tg:${rig.store.database}:anchor:`,
    }).catch(async (err: unknown) => {
      await forward.stop();
      throw err;
    });
    const missRounds = await measureMisses(rig, { forward, anchor }, MISS_LATENCY_MS, MISS_ROUNDS, MISS_PER_ROUND, MISS_WARMUP).finally(async () => {
      await forward.stop();
      await anchor.stop();
    });
    const m = missMedians(missRounds);
    const m99 = missMedians(missRounds, 'p99');
    const missFailures = missFailuresOf(missRounds);
    const added = { forward: m.forward - m.direct, anchor: m.anchor - m.direct, shared: m.shared - m.direct };

    // 3. Herds: one on the embedded gateway for reference, then HERDS spread over the replicas.
    await setProviderLatency(rig.sim.url, HERD_LATENCY_MS);
    progress(`replicas: herds of ${HERD_N}`);
    const embeddedHerd = await herd(rig.sim, [emb.url], rig.embeddedKeys.plain, HERD_N, 4_000_000);
    const herds: Herd[] = [];
    for (let i = 0; i < HERDS; i++) herds.push(await herd(rig.sim, rig.replicas.map((r) => r.url), rig.sharedKeys.plain, HERD_N, 4_000_001 + i));
    await setProviderLatency(rig.sim.url, 0);
    const herdOk = (h: Herd) => h.calls === 1 && h.statuses['200'] === h.n;
    const worstHerd = herds.reduce((a, h) => (h.calls > a.calls ? h : a));

    // 4. One rate limit, every replica hammered at once inside one window.
    progress(`replicas: rate limit ${RATE_LIMIT}/minute over ${REPLICAS} × ${RATE_CONNECTIONS} connections`);
    const rate = await measureRate(rig, RATE_LIMIT, RATE_S, RATE_CONNECTIONS);
    const admitted = rate.statuses[200] ?? 0;
    const refused = rate.statuses[429] ?? 0;
    const others = Object.entries(rate.statuses).filter(([s]) => s !== '200' && s !== '429').reduce((a, [, c]) => a + c, 0);

    return {
      id: 'replicas',
      title: '8. Replicas (shared backend)',
      figures: [
        {
          figure: 'Hit throughput, one shared replica vs embedded (key without budget)',
          measured: `${fmt.int(sp.rps)} req/s`,
          baseline: `${fmt.int(ep.rps)} req/s`,
          ratio: plainRatio,
          target: '≥ 0.7',
          pass: plainRatio >= 0.7 && hitFailures === 0 && hitCalls === 0,
        },
        { figure: 'Hit CPU per request, embedded ÷ shared (key without budget)', measured: `${sp.cpuUsPerRequest.toFixed(0)} µs`, baseline: `${ep.cpuUsPerRequest.toFixed(0)} µs`, ratio: ep.cpuUsPerRequest / sp.cpuUsPerRequest, target: '—', pass: null },
        { figure: 'Hit throughput, one shared replica vs embedded (key with a credit budget)', measured: `${fmt.int(sb.rps)} req/s`, baseline: `${fmt.int(eb.rps)} req/s`, ratio: sb.rps / eb.rps, target: '—', pass: null },
        { figure: 'Hit CPU per request, embedded ÷ shared (key with a credit budget)', measured: `${sb.cpuUsPerRequest.toFixed(0)} µs`, baseline: `${eb.cpuUsPerRequest.toFixed(0)} µs`, ratio: eb.cpuUsPerRequest / sb.cpuUsPerRequest, target: '—', pass: null },
        {
          figure: `Median latency added to a miss, shared replica (provider ${MISS_LATENCY_MS} ms)`,
          measured: fmt.ms(m.shared - m.direct),
          baseline: `${fmt.ms(m.direct)} direct → ${fmt.ms(m.shared)} via a replica`,
          ratio: null,
          target: '≤ 2 ms',
          pass: m.shared - m.direct <= 2 && missFailures === 0,
        },
        { figure: 'Median latency added to a miss, embedded (same run)', measured: fmt.ms(m.embedded - m.direct), baseline: `${fmt.ms(m.direct)} direct → ${fmt.ms(m.embedded)} via embedded`, ratio: null, target: '—', pass: null },
        {
          figure: "Median latency added to a miss, anchor: bare node:http making the shared miss's store round trips (same run)",
          measured: fmt.ms(added.anchor),
          baseline: `${fmt.ms(m.direct)} direct → ${fmt.ms(m.anchor)} via the anchor`,
          ratio: null,
          target: '—',
          pass: null,
        },
        { figure: 'Median latency added to a miss, shared replica ÷ that anchor', measured: fmt.ms(added.shared), baseline: fmt.ms(added.anchor), ratio: added.shared / added.anchor, target: '—', pass: null },
        { figure: 'Median latency added to a miss, bare node:http proxy forwarding only (same run)', measured: fmt.ms(added.forward), baseline: `${fmt.ms(m.direct)} direct → ${fmt.ms(m.forward)} via the proxy`, ratio: null, target: '—', pass: null },
        {
          figure: `Provider calls for ${HERD_N} concurrent identical misses over ${REPLICAS} replicas (worst of ${HERDS})`,
          measured: String(worstHerd.calls),
          baseline: `${REPLICAS} coalescing per replica only, ${HERD_N} without`,
          ratio: null,
          target: '1',
          pass: herds.every(herdOk),
        },
        {
          figure: `Requests admitted under ${rate.policy}, ${REPLICAS} replicas × ${RATE_CONNECTIONS} connections`,
          measured: fmt.int(admitted),
          baseline: `limit ${fmt.int(RATE_LIMIT)}`,
          ratio: admitted / RATE_LIMIT,
          target: 'exactly the limit',
          pass: admitted === RATE_LIMIT && others === 0 && rate.errors === 0 && rate.oneWindow,
        },
      ],
      details: [
        `Method: one simulator, one \`tollgate serve\` on the embedded backend (SQLite in its data dir) and ${REPLICAS} on the shared backend — a`,
        `PostgreSQL database created for the run (\`tollgate_bench_<pid>\`, dropped after) and Redis database 14, whose keys carry the database's`,
        `name — each replica with a data dir of its own. Keys are created through the CLI on each backend with the same settings: one without`,
        `budget or rate policy (its advisory rate window is still counted on every request: in memory when embedded, in Redis when shared),`,
        `one with a credit budget of ${BUDGET} (every answer then carries X-Credits-*, which reads the budget's usage and reservations).`,
        '',
        `**Hits.** ${HIT_ENTITIES} profiles cached through each gateway's own API (the shared one through replica 1, so into PostgreSQL); load as`,
        `in benchmark 1 (autocannon, ${SETTINGS.connections} connections, ids uniformly random over the cached ones, ${SETTINGS.warmupS} s warm-up each), then`,
        `${HIT_ROUNDS} rounds of ${HIT_S} s per subject in turn against replica 1; the best round of each is kept. Redis and PostgreSQL CPU are read`,
        `from /proc for the Redis server and for the PostgreSQL backends connected to this run's database, per answered request (the embedded`,
        `rows show their floor: the idle replicas' once-a-second flushes and other clients of the same Redis). The provider`,
        `saw ${hitCalls} calls during the hit rounds${hitCalls ? ' — **so not every answer was a hit**' : ' (every answer was a hit)'}; ${hitFailures ? `**${hitFailures} answers were not 2xx or failed**` : 'every answer was a 200'}.`,
        '',
        '| Subject (best round) | Throughput | p50 | p99 | Gateway cores | Gateway CPU/request | Redis CPU/request | PostgreSQL CPU/request | Generator cores | Failures |',
        '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
        ...subjects.map((s, j) => hitRow(s.name, best(hitRuns[j]!))),
        '',
        `Every round: ${subjects.map((s, j) => `${s.name.toLowerCase()} ${hitRuns[j]!.map((r) => fmt.int(r.rps)).join(' / ')}`).join('; ')} req/s.`,
        '',
        `**Misses.** The simulator delays every \`/v1/profile\` answer by ${MISS_LATENCY_MS} ms (a latency fault). One connection, one request at a time, each`,
        `for an entity never asked for before, so every one is a miss and a fresh provider call: ${MISS_WARMUP} warm-up requests per path, then ${MISS_ROUNDS}`,
        `rounds of ${MISS_PER_ROUND} direct, ${MISS_PER_ROUND} through each anchor, ${MISS_PER_ROUND} through the embedded gateway and ${MISS_PER_ROUND} through replica 1 (key`,
        `without budget), alternated; medians of the rounds' p50 (and p99).${missFailures ? ` **${missFailures} requests failed.**` : ' Every answer was a 200.'} The anchors are`,
        "processes of their own with the gateway's node flags (bench/miss-anchor-server.ts): a bare node:http proxy that only forwards",
        "(bench/lib/proxy-anchor.ts), and the same making, per miss, the store round trips issue 13's guarantees require, in Tollgate's order",
        "and parallelism, with statements of Tollgate's shape on tables of its own in this run's database (bench/lib/miss-anchor.ts): rate",
        'take (EVALSHA) ∥ cache read; claim (SET NX PX) ∥ reservation INSERT (synchronous commit); the provider call; settle (one statement,',
        "synchronous commit) ∥ cache upsert (synchronous_commit=off); the claim released, not awaited; the provider's body answered.",
        '',
        '| Round | Direct to the simulator | Bare proxy, forwarding only | Anchor with the store round trips | Through the embedded gateway | Through a shared replica |',
        '|---|---|---|---|---|---|',
        ...missRounds.map((r, i) => `| ${i + 1} | ${missRow(r.direct)} | ${missRow(r.forward)} | ${missRow(r.anchor)} | ${missRow(r.embedded)} | ${missRow(r.shared)} |`),
        '',
        `Split of the shared replica's median added latency (p50; p99 in brackets): forwarding ${fmt.ms(added.forward)} (${fmt.ms(m99.forward - m99.direct)}),`,
        `the store round trips ${fmt.ms(added.anchor - added.forward)} (${fmt.ms(m99.anchor - m99.forward)}), Tollgate's own ${fmt.ms(added.shared - added.anchor)}`,
        `(${fmt.ms(m99.shared - m99.anchor)}); anchor adds ${fmt.ms(added.anchor)}, Tollgate shared adds ${fmt.ms(added.shared)}, Tollgate ÷ anchor ${(added.shared / added.anchor).toFixed(2)}.`,
        '',
        `**Herds.** The simulator delays \`/v1/profile\` by ${HERD_LATENCY_MS} ms; ${HERD_N} keep-alive connections are opened first, then ${HERD_N} identical`,
        `\`GET /v1/profile?person.id=X\` (a new X each herd) are sent at once, request i to gateway i mod ${REPLICAS}. Provider calls from the simulator's`,
        `\`/__sim/stats\`; "led" answered a provider call of its own, "joined" shared one (\`Cache-Status: …; collapsed\`), "hit" found it stored.`,
        '',
        '| Herd | Gateways | Provider calls | Statuses | Answers | Wall time |',
        '|---|---:|---:|---|---|---:|',
        `| embedded (reference) | 1 | ${embeddedHerd.calls} | ${statusesOf(embeddedHerd.statuses)} | ${kindsOf(embeddedHerd)} | ${fmt.ms(embeddedHerd.ms)} |`,
        ...herds.map((h, i) => `| shared ${i + 1} | ${h.servers} | ${h.calls}${herdOk(h) ? '' : ' **(fail)**'} | ${statusesOf(h.statuses)} | ${kindsOf(h)} | ${fmt.ms(h.ms)} |`),
        '',
        `**Rate limit.** A shared key limited to ${rate.policy}, loaded through all ${REPLICAS} replicas at once (${RATE_CONNECTIONS} connections each, ids over the`,
        `cached profiles) for ${RATE_S} s, inside one minute window (the run waits for the next window when fewer than ${RATE_S + 3} s are left; it waited`,
        `${rate.waitedS.toFixed(1)} s). Answers: ${statusesOf(rate.statuses)}${rate.errors ? `; ${rate.errors} connection errors` : ''} in ${rate.seconds.toFixed(1)} s;`,
        `${fmt.int(admitted)} admitted against a limit of ${fmt.int(RATE_LIMIT)} (${admitted > RATE_LIMIT ? `**${admitted - RATE_LIMIT} over**` : admitted < RATE_LIMIT ? `${RATE_LIMIT - admitted} under` : '0 over'}), ${fmt.int(refused)} refused with 429${rate.oneWindow ? '' : ' — **the run crossed a window boundary**'}.`,
      ].join('\n'),
    };
  } finally {
    await rig.close();
  }
}
