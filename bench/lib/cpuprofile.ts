/**
 * A small analyzer for V8 .cpuprofile files (node --cpu-prof): self time per function,
 * inclusive time per function (each sample counted once per function on its stack), and
 * self time per origin (a package, node internals, Tollgate's own files, GC).
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  /** µs on the monotonic clock (CLOCK_MONOTONIC on Linux, as process.hrtime), the start of the first delta. */
  startTime: number;
}

/** Monotonic µs, comparable with a profile's sample times (both CLOCK_MONOTONIC on Linux). */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

export interface Entry {
  name: string;
  ms: number;
  share: number;
}

export interface Analysis {
  totalMs: number;
  idleMs: number;
  /**
   * Time in gaps between two samples over 3 ms (the sampling interval is 1 ms or less): the
   * process did not run (other processes had the CPU), whatever the sample it is charged to.
   */
  gapMs: number;
  self: Entry[];
  inclusive: Entry[];
  /** Inclusive time of any function, node internals and packages too. */
  inclusiveAll: Entry[];
  origins: Entry[];
}

/** Where a frame's code comes from: `fastify`, `node:internal`, `tollgate`, `(gc)`… */
export function originOf(f: CallFrame): string {
  if (!f.url) return f.functionName.startsWith('(') ? f.functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(f.url);
  if (pkg) return pkg[1]!;
  if (f.url.startsWith('node:')) return 'node (JS internals)';
  if (/\/dist\//.test(f.url)) return 'tollgate';
  return f.url;
}

function frameName(f: CallFrame): string {
  const file = f.url.replace(/^.*node_modules\//, '').replace(/^.*\/dist\//, 'dist/').replace(/^file:\/\//, '');
  return `${f.functionName || '(anonymous)'}${file ? ` ${file}:${f.lineNumber + 1}` : ''}`;
}

const top = (m: Map<string, number>, total: number, n: number): Entry[] =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, us]) => ({ name, ms: us / 1000, share: us / total }));

/** `window`: only samples taken between these monotonicUs() times (e.g. a measured round, not the warm-up). */
export function analyze(file: string, n = 20, window?: { fromUs: number; toUs: number }): Analysis {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of p.nodes) for (const c of node.children ?? []) parent.set(c, node.id);

  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  const origins = new Map<string, number>();
  let total = 0;
  let idle = 0;
  let gap = 0;
  let at = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    // timeDeltas[i] is the time since the previous sample; charge it to the sample that ends it.
    const us = p.timeDeltas[i] ?? 0;
    at += us;
    if (window && (at < window.fromUs || at > window.toUs)) continue;
    const node = byId.get(p.samples[i]!)!;
    total += us;
    if (us > 3_000) gap += us;
    if (node.callFrame.functionName === '(idle)') {
      idle += us;
      continue;
    }
    const name = frameName(node.callFrame);
    self.set(name, (self.get(name) ?? 0) + us);
    const origin = originOf(node.callFrame);
    origins.set(origin, (origins.get(origin) ?? 0) + us);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const f = byId.get(id)!.callFrame;
      if (f.functionName === '(root)') continue;
      const fn = frameName(f);
      if (seen.has(fn)) continue;
      seen.add(fn);
      incl.set(fn, (incl.get(fn) ?? 0) + us);
    }
  }
  const busy = total - idle;
  return {
    totalMs: total / 1000,
    idleMs: idle / 1000,
    gapMs: gap / 1000,
    self: top(self, busy, n),
    inclusive: top(
      new Map([...incl].filter(([k]) => k.includes(' dist/'))),
      busy,
      n,
    ),
    inclusiveAll: top(incl, busy, n),
    origins: top(origins, busy, n),
  };
}

/** A markdown table of entries; with `requests`, also the cost per request in µs. */
export function entryTable(title: string, entries: Entry[], requests?: number): string {
  const per = (e: Entry) => (requests ? ` ${((e.ms * 1000) / requests).toFixed(1)} |` : '');
  return [
    `| ${title} | ms | share of busy time |${requests ? ' µs per request |' : ''}`,
    `|---|---:|---:|${requests ? '---:|' : ''}`,
    ...entries.map((e) => `| \`${e.name}\` | ${e.ms.toFixed(0)} | ${(e.share * 100).toFixed(1)}% |${per(e)}`),
  ].join('\n');
}
