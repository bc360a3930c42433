/**
 * What Docker Compose does to docker-compose.yml before it runs anything, for the tests that
 * read the file without Docker: `${…}` interpolation from the environment and `.env`, and
 * its durations. Only the forms the file uses are supported; any other `$` form throws, so
 * a new one cannot slip past the tests unread.
 */

type Env = Readonly<Record<string, string | undefined>>;

/** `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?message}` and `$$`, as Compose reads them. */
export function interpolate(text: string, env: Env): string {
  return text.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}|\$(.)/g, (whole, name?: string, colon?: string, op?: string, arg?: string, other?: string) => {
    if (whole === '$$') return '$';
    if (other !== undefined) throw new Error(`unsupported interpolation '${whole}' in '${text}'`);
    const value = env[name!];
    const missing = colon ? !value : value === undefined;
    if (!missing) return value!;
    if (op === '?') throw new Error(`required variable ${name} is unset: ${arg}`);
    return op === '-' ? arg! : '';
  });
}

/** Every `${…}` default in `text`, e.g. `demo` for `${PASSWORD:-demo}`. */
export function interpolationDefaults(text: string): string[] {
  return [...text.matchAll(/\$\{[A-Za-z_][A-Za-z0-9_]*:?-([^}]*)\}/g)].map((m) => m[1]!);
}

/** A `.env`-style file: `NAME=value` lines; with `commented`, also the `# NAME=value` examples. */
export function parseEnvFile(text: string, opts: { commented?: boolean } = {}): Record<string, string> {
  const env: Record<string, string> = {};
  const line = opts.commented ? /^(?:#\s*)?([A-Z_][A-Z0-9_]*)=(.*)$/ : /^([A-Z_][A-Z0-9_]*)=(.*)$/;
  for (const l of text.split('\n')) {
    const m = line.exec(l.trim());
    if (m) env[m[1]!] = m[2]!;
  }
  return env;
}

/** A Compose duration (`20s`, `1m30s`, `500ms`) in milliseconds. */
export function durationMs(d: string): number {
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };
  const parts = [...d.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== d) throw new Error(`not a duration: '${d}'`);
  return parts.reduce((sum, p) => sum + Number(p[1]) * unit[p[2]!]!, 0);
}
