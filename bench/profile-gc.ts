/**
 * What the collector's pauses add to the hit path's tail (`npx tsx bench/profile-gc.ts [rate]`):
 * the gateway of benchmark 1 under `--trace-gc` and a constant-rate hit load (default
 * 6,000/s, 20 s after 5 s of warm-up, as benchmark 9's constant-rate rows); prints its young-
 * and old-generation pauses over both (count, total, per hit, median, max) beside the measured
 * load's latency percentiles. A pause longer than
 * the tail would make the tail; pauses far shorter than it leave it to something else. Not part
 * of `npm run bench`: a tool.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startStack } from './lib/stack.js';
import { fmt } from './lib/stats.js';
import { fillThroughGateway, HIT_ENTITIES, hitsAtRate } from './hit.js';

const rate = Number(process.argv[2] ?? 6000);
const DURATION_S = 20;
/** A cold gateway queues its first second's requests while V8 compiles: 5 s of the same load come first, unmeasured. */
const WARM_UP_S = 5;

/** Main-thread pauses from V8's `--trace-gc` lines (`…, 0.72 / 0.01 ms …`), by generation. */
function pauses(log: string): { young: number[]; old: number[] } {
  const young: number[] = [];
  const old: number[] = [];
  for (const line of log.split('\n')) {
    const ms = /: (Scavenge|Minor Mark-Sweep|Mark-Compact|Mark-Sweep)\b.*?, ([\d.]+) \/ [\d.]+ ms/.exec(line);
    if (ms) (ms[1] === 'Scavenge' || ms[1] === 'Minor Mark-Sweep' ? young : old).push(Number(ms[2]));
  }
  return { young, old };
}

function describe(name: string, ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const total = s.reduce((a, b) => a + b, 0);
  const perHitUs = (total * 1000) / (rate * (WARM_UP_S + DURATION_S));
  return `${name}: ${s.length} pauses, ${fmt.ms(total)} in all (${perHitUs.toFixed(1)} µs per hit), median ${fmt.ms(s[Math.floor(s.length / 2)] ?? 0)}, max ${fmt.ms(s[s.length - 1] ?? 0)}`;
}

const stack = await startStack();
try {
  await fillThroughGateway(stack.gw.url, stack.auth, HIT_ENTITIES);
  const gw = await stack.restartGateway(['--trace-gc']);
  await hitsAtRate(gw.url, gw.pid, rate, WARM_UP_S, stack.auth, 1);
  const load = await hitsAtRate(gw.url, gw.pid, rate, DURATION_S, stack.auth);
  await gw.stop();
  // The gateway's stdout (its log, and V8's trace lines) goes to the newest gateway-N.log of the stack.
  const logs = readdirSync(stack.dir).filter((f) => /^gateway-\d+\.log$/.test(f)).sort((a, b) => Number(/\d+/.exec(a)![0]) - Number(/\d+/.exec(b)![0]));
  const { young, old } = pauses(readFileSync(join(stack.dir, logs[logs.length - 1]!), 'utf8'));
  console.log(`${load.good.length} hits at ${rate}/s: p50 ${fmt.ms(load.p50)}, p99 ${fmt.ms(load.p99)}, p99.9 ${fmt.ms(load.p999)}, max ${fmt.ms(load.max)}; generator stall ${fmt.ms(load.generatorStallMs)}; ${load.failed} failed`);
  console.log(describe('young generation', young));
  console.log(describe('old generation', old));
} finally {
  await stack.close();
}
