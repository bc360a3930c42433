/**
 * What the slowest answers of a traced constant-rate run (traced-rate.ts) were correlated
 * with: each answer's latency split into its parts (generator late to fire it, waiting for a
 * free connection, waiting for the server to read it, inside the server, generator late to
 * read the answer), the slowest grouped into episodes (due within 20 ms of each other), and
 * each episode printed beside what the server's and the generator's probes (trace-probe.mjs)
 * saw over the same span: garbage collections, event-loop gaps, slow callbacks, and how the
 * main thread spent the span (on a CPU, runnable but waiting for one, idle).
 */
import { percentile } from './stats.js';
import type { TracedRun } from './traced-rate.js';

export interface ProbeEvent {
  k: 'gc' | 'gap' | 'cb';
  what?: string;
  fromUs: number;
  ms: number;
  runDelayMs?: number;
  onCpuMs?: number;
}

export interface ProbeDump {
  events: ProbeEvent[];
  /** Triples: monotonic µs, cumulative on-CPU ms, cumulative run-queue ms. */
  ticks: number[];
  seq: number[];
  arrivedUs: number[];
  finishedUs: number[];
}

export const PART_NAMES = ['late fire', 'pool queue', 'to server', 'in server', 'to read'] as const;

export interface Answer {
  i: number;
  latency: number;
  /** In the order of PART_NAMES, ms. */
  parts: number[];
}

const EPISODE_GAP_US = 20_000;
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '?');

export function answersOf(run: TracedRun, server: ProbeDump): Answer[] {
  const arrived = new Float64Array(run.n).fill(NaN);
  const finished = new Float64Array(run.n).fill(NaN);
  for (let j = 0; j < server.seq.length; j++) {
    const i = server.seq[j]!;
    if (i >= 0 && i < run.n) {
      arrived[i] = server.arrivedUs[j]!;
      finished[i] = server.finishedUs[j]!;
    }
  }
  const out: Answer[] = [];
  for (let i = 0; i < run.n; i++) {
    if (!run.ok[i]) continue;
    const t = [run.dueUs[i]!, run.firedUs[i]!, run.sentUs[i]!, arrived[i]!, finished[i]!, run.doneUs[i]!];
    out.push({ i, latency: (t[5]! - t[0]!) / 1000, parts: PART_NAMES.map((_, k) => (t[k + 1]! - t[k]!) / 1000) });
  }
  return out;
}

/** How the probed thread spent [from, to]: ms on a CPU, ms waiting for one, ms idle (from the ticks around it). */
export function threadTime(d: ProbeDump, from: number, to: number): { on: number; wait: number; idle: number } {
  const t = d.ticks;
  let a = -1;
  let b = -1;
  for (let k = 0; k < t.length; k += 3) {
    if (t[k]! <= from) a = k;
    if (t[k]! >= to) {
      b = k;
      break;
    }
  }
  if (a < 0 || b < 0) return { on: NaN, wait: NaN, idle: NaN };
  const span = (t[b]! - t[a]!) / 1000;
  const on = t[b + 1]! - t[a + 1]!;
  const wait = t[b + 2]! - t[a + 2]!;
  return { on, wait, idle: span - on - wait };
}

function summary(d: ProbeDump, from: number, to: number): string {
  const inside = d.events.filter((e) => e.fromUs <= to && e.fromUs + e.ms * 1000 >= from);
  const of = (k: string) => inside.filter((e) => e.k === k);
  const list = (es: ProbeEvent[], top = 4) =>
    [...es].sort((x, y) => y.ms - x.ms).slice(0, top).map((e) => `${e.what ? `${e.what} ` : ''}${f1(e.ms)}${e.runDelayMs !== undefined ? ` (on CPU ${f1(e.onCpuMs ?? NaN)}, waiting ${f1(e.runDelayMs)})` : ''}`).join(', ');
  const sum = (es: ProbeEvent[]) => f1(es.reduce((s, e) => s + e.ms, 0));
  const tt = threadTime(d, from, to);
  const gc = of('gc');
  const gaps = of('gap');
  const cbs = of('cb');
  return [
    `span ${f1((to - from) / 1000)} ms: on CPU ${f1(tt.on)}, waiting for a CPU ${f1(tt.wait)}, idle ${f1(tt.idle)}`,
    gc.length ? `gc ${gc.length} (${sum(gc)} ms; ${list(gc, 3)})` : 'no gc',
    gaps.length ? `loop gaps ${gaps.length} (${list(gaps, 3)})` : 'no loop gap',
    cbs.length ? `slow callbacks ${cbs.length} (${list(cbs, 3)})` : '',
  ]
    .filter(Boolean)
    .join('; ');
}

const max = (xs: number[]) => xs.reduce((a, b) => Math.max(a, b), 0);

/** Lines describing one run: percentiles, the parts of the p99.9 set, and the worst episodes beside what the probes saw. */
export function attribute(name: string, run: TracedRun, server: ProbeDump, generator: ProbeDump, episodes = 5): string[] {
  const answers = answersOf(run, server);
  const lat = Float64Array.from(answers, (a) => a.latency).sort();
  const p = (q: number) => percentile(lat, q);
  const ev = (d: ProbeDump, k: string) => d.events.filter((e) => e.k === k).map((e) => e.ms);
  const lines = [
    `${name}: ${answers.length} answers, ${run.failed} failed, CPU ${run.cpuUsPerRequest.toFixed(1)} µs/answer; p50 ${f1(p(50))} p99 ${f1(p(99))} p99.9 ${f1(p(99.9))} max ${f1(lat[lat.length - 1] ?? NaN)} ms`,
    `  whole run: server gc ${ev(server, 'gc').length} (max ${f1(max(ev(server, 'gc')))}), loop gaps ${ev(server, 'gap').length} (max ${f1(max(ev(server, 'gap')))}), slow callbacks ${ev(server, 'cb').length} (max ${f1(max(ev(server, 'cb')))}); generator gc ${ev(generator, 'gc').length} (max ${f1(max(ev(generator, 'gc')))}), loop gaps max ${f1(max(ev(generator, 'gap')))}`,
  ];
  const cut = p(99.9);
  const slow = answers.filter((a) => a.latency >= cut);
  const med = (k: number) => f1(percentile(Float64Array.from(slow, (a) => a.parts[k]!).sort(), 50));
  lines.push(`  p99.9 set (${slow.length} answers ≥ ${f1(cut)} ms), median of each part: ${PART_NAMES.map((n, k) => `${n} ${med(k)}`).join(', ')} ms`);
  const groups: Answer[][] = [];
  for (const a of slow) {
    const last = groups[groups.length - 1];
    if (last && run.dueUs[a.i]! - run.dueUs[last[last.length - 1]!.i]! <= EPISODE_GAP_US) last.push(a);
    else groups.push([a]);
  }
  const worst = (g: Answer[]) => g.reduce((x, y) => (y.latency > x.latency ? y : x));
  groups.sort((x, y) => worst(y).latency - worst(x).latency);
  const t0 = run.dueUs[0]!;
  for (const g of groups.slice(0, episodes)) {
    const w = worst(g);
    // From when the first of them was due to when the worst was answered.
    const from = run.dueUs[g[0]!.i]!;
    const to = run.doneUs[w.i]!;
    lines.push(
      `  episode at +${((from - t0) / 1e6).toFixed(3)} s, ${g.length} of the set; worst ${f1(w.latency)} ms = ${PART_NAMES.map((n, k) => `${n} ${f1(w.parts[k]!)}`).join(' + ')}`,
      `    server: ${summary(server, from, to)}`,
      `    generator: ${summary(generator, from, to)}`,
    );
  }
  return lines;
}
