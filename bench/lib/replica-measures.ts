/**
 * The four measurements of the replicas benchmark (bench/replicas.ts), each of a shared-backend
 * replica against a baseline in the same run: the embedded backend, the provider called
 * directly, or the rate limit itself.
 */
import { Pool } from 'undici';
import { HIT_ENTITIES, randomPaths } from '../hit.js';
import { runLoad, SETTINGS, warmUp, type LoadResult } from './load.js';
import { progress } from './log.js';
import type { Child } from './procs.js';
import { setProviderLatency, simCalls, type Rig } from './replica-rig.js';
import { median } from './stats.js';
import { entityId, entityPath, SIM_KEY } from './stack.js';

/** One server under the hit load, with what the shared stores spent meanwhile. */
export interface HitRun extends LoadResult {
  /** CPU µs per answered request of Redis and of this run's PostgreSQL backends. */
  redisUs: number;
  postgresUs: number;
}

export interface HitSubject {
  name: string;
  url: string;
  serverPid: number;
  headers: Record<string, string>;
}

/** Subjects loaded in turn, `rounds` times; every run kept (the caller picks the best). */
export async function measureHits(rig: Rig, subjects: readonly HitSubject[], rounds: number, durationS: number): Promise<HitRun[][]> {
  const pathsFor = randomPaths(HIT_ENTITIES);
  for (const s of subjects) await warmUp({ ...s, connections: SETTINGS.connections, pathsFor });
  const out: HitRun[][] = subjects.map(() => []);
  for (let i = 0; i < rounds; i++) {
    for (const [j, s] of subjects.entries()) {
      progress(`replicas: hit round ${i + 1}/${rounds}, ${s.name}`);
      const before = await rig.store.cpu();
      const r = await runLoad({ ...s, connections: SETTINGS.connections, pathsFor, durationS });
      const after = await rig.store.cpu();
      const per = (s0: number, s1: number) => ((s1 - s0) * 1e6) / Math.max(1, r.requests);
      out[j]!.push({ ...r, redisUs: per(before.redis, after.redis), postgresUs: per(before.postgres, after.postgres) });
    }
  }
  return out;
}

export interface MissRound {
  direct: LoadResult;
  /** The anchors (bench/miss-anchor-server.ts): a bare proxy forwarding only, and one making the shared store's round trips. */
  forward: LoadResult;
  anchor: LoadResult;
  embedded: LoadResult;
  shared: LoadResult;
}

/** The anchors' processes, measured beside the gateways. */
export interface MissAnchors {
  forward: Child;
  anchor: Child;
}

/**
 * One request at a time, each for an entity nobody asked for before (a miss at the gateway, a
 * fresh profile at the simulator), the provider slowed by `latencyMs`: direct, through each
 * anchor, through the embedded gateway and through one shared replica, alternated per round.
 */
export async function measureMisses(rig: Rig, anchors: MissAnchors, latencyMs: number, rounds: number, perRound: number, warmup: number): Promise<MissRound[]> {
  await setProviderLatency(rig.sim.url, latencyMs);
  let next = 3_000_000;
  const fresh = (count: number) => () => Array.from({ length: count }, () => entityPath(next++));
  type Target = { url: string; serverPid: number; headers: Record<string, string> };
  const direct: Target = { url: rig.sim.url, serverPid: rig.sim.pid, headers: { authorization: `Bearer ${SIM_KEY}` } };
  const embedded = { url: rig.embedded.url, serverPid: rig.embedded.pid, headers: rig.embeddedKeys.plain };
  const shared = { url: rig.replicas[0]!.url, serverPid: rig.replicas[0]!.pid, headers: rig.sharedKeys.plain };
  const forward = { url: anchors.forward.url, serverPid: anchors.forward.pid, headers: {} };
  const anchor = { url: anchors.anchor.url, serverPid: anchors.anchor.pid, headers: {} };
  const one = (o: Target, n: number) => runLoad({ ...o, connections: 1, durationS: 0, amount: n, pathsFor: fresh(n) });
  for (const o of [direct, forward, anchor, embedded, shared]) await one(o, warmup);
  const out: MissRound[] = [];
  for (let i = 0; i < rounds; i++) {
    progress(`replicas: miss round ${i + 1}/${rounds}`);
    out.push({ direct: await one(direct, perRound), forward: await one(forward, perRound), anchor: await one(anchor, perRound), embedded: await one(embedded, perRound), shared: await one(shared, perRound) });
  }
  await setProviderLatency(rig.sim.url, 0);
  return out;
}

export type MissPath = keyof MissRound;
export const MISS_PATHS: readonly MissPath[] = ['direct', 'forward', 'anchor', 'embedded', 'shared'];

/** Median over rounds of each path's p50 (or p99). */
export function missMedians(rounds: readonly MissRound[], at: 'p50' | 'p99' = 'p50'): Record<MissPath, number> {
  return Object.fromEntries(MISS_PATHS.map((p) => [p, median(rounds.map((r) => r[p][at]))])) as Record<MissPath, number>;
}

export interface Herd {
  servers: number;
  n: number;
  calls: number;
  statuses: Record<string, number>;
  /** led (made the provider call), joined (`Cache-Status: …; collapsed`), hit (arrived after the store). */
  kinds: Record<string, number>;
  ms: number;
}

const count = (m: Record<string, number>, k: string) => void (m[k] = (m[k] ?? 0) + 1);

/**
 * `n` identical misses at once, request i sent to server i mod servers.length, each server's
 * connections opened beforehand so that the herd is `n` requests, not `n` handshakes.
 */
export async function herd(sim: Child, servers: readonly string[], auth: Record<string, string>, n: number, entity: number): Promise<Herd> {
  const pools = servers.map((url, s) => new Pool(url, { connections: Math.ceil((n - s) / servers.length), pipelining: 1 }));
  try {
    await Promise.all(
      Array.from({ length: n }, (_, i) => pools[i % pools.length]!.request({ method: 'GET', path: '/healthz' }).then((r) => r.body.dump())),
    );
    const before = await simCalls(sim.url);
    const path = `/v1/profile?person.id=${entityId(entity)}`;
    const t0 = performance.now();
    const replies = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const r = await pools[i % pools.length]!.request({ method: 'GET', path, headers: auth });
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
    return { servers: servers.length, n, calls: (await simCalls(sim.url)) - before, statuses, kinds, ms };
  } finally {
    await Promise.all(pools.map((p) => p.close()));
  }
}

export interface RateRun {
  limit: number;
  policy: string;
  statuses: Record<number, number>;
  errors: number;
  /** Whether the whole run fell inside one window of the policy (else a second window admits more). */
  oneWindow: boolean;
  seconds: number;
  waitedS: number;
}

/**
 * A key limited to `limit` per minute, hammered through every replica at once (`connections`
 * each) for `durationS` seconds inside one minute window: the run waits for the next window
 * when the current one has too little left.
 */
export async function measureRate(rig: Rig, limit: number, durationS: number, connections: number): Promise<RateRun> {
  const policy = `${limit}/minute`;
  const auth = rig.sharedKey({ name: 'rated', rate: policy });
  const windowMs = 60_000;
  const left = windowMs - (Date.now() % windowMs);
  const needMs = durationS * 1000 + 3_000;
  const waitMs = left < needMs ? left + 250 : 0;
  if (waitMs) progress(`replicas: waiting ${(waitMs / 1000).toFixed(1)} s for a fresh rate window`);
  await new Promise((r) => setTimeout(r, waitMs));
  const t0 = Date.now();
  const pathsFor = randomPaths(HIT_ENTITIES);
  const runs = await Promise.all(rig.replicas.map((r) => runLoad({ url: r.url, serverPid: r.pid, headers: auth, connections, durationS, pathsFor })));
  const t1 = Date.now();
  const statuses: Record<number, number> = {};
  for (const r of runs) for (const [s, c] of Object.entries(r.statuses)) statuses[Number(s)] = (statuses[Number(s)] ?? 0) + c;
  return {
    limit,
    policy,
    statuses,
    errors: runs.reduce((a, r) => a + r.errors, 0),
    oneWindow: Math.floor(t0 / windowMs) === Math.floor(t1 / windowMs),
    seconds: (t1 - t0) / 1000,
    waitedS: waitMs / 1000,
  };
}
