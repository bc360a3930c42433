/** One sample of the Prometheus text exposition format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parse exposition text (enough of it for tests: no escapes beyond \" \\ \n in label values). */
export function parseSamples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparseable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]!] = l[2]!.replace(/\\n/g, '\n').replace(/\\(.)/g, '$1');
    }
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** Sum of the samples of `name` whose labels include `match`; 0 when there are none. */
export function total(samples: Sample[], name: string, match: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}

/** The samples of `name` whose labels include `match`. */
export function find(samples: Sample[], name: string, match: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v));
}
