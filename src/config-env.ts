import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigSchema } from './config-schema.js';

/**
 * The environment as a configuration layer, derived from the schema so that it cannot drift
 * from the options: every option is a variable named by one rule (envName), read by its
 * option's type, also from a file (`<VAR>_FILE`). Nothing here is validated beyond the shape
 * of a value; the schema judges the values (config.ts).
 */

export const ENV_PREFIX = 'TOLLGATE_';
export const FILE_SUFFIX = '_FILE';

/** How an option's value is read from a variable (README "Configuration"). */
export type EnvKind = 'string' | 'number' | 'boolean' | 'list';

/** What `config check` masks: a whole value, or the password of a URL. Set with `.meta({ sensitive })` in the schema. */
export type Sensitivity = 'secret' | 'url';

export interface EnvOption {
  /** Dotted path in the YAML file, e.g. upstream.maxConcurrency. */
  readonly path: string;
  /** TOLLGATE_UPSTREAM_MAX_CONCURRENCY. */
  readonly env: string;
  readonly kind: EnvKind;
  /** The literal `null` sets null (e.g. ledger.retentionDays: keep forever). */
  readonly nullable: boolean;
  readonly sensitive: Sensitivity | null;
}

/** `maxConcurrency` → `MAX_CONCURRENCY`; `profile_posts` stays `PROFILE_POSTS`. Segments joined with `_`. */
export function envName(path: string): string {
  return ENV_PREFIX + path.split('.').map((s) => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_');
}

/**
 * The short names of DESIGN §7, kept working (deploy files and users' scripts use them). The
 * rule's name wins when both are set: the image sets TOLLGATE_HOST and TOLLGATE_PORT, and a
 * user's TOLLGATE_SERVER_PORT must not be refused for it.
 */
export const ENV_ALIASES: Readonly<Record<string, string>> = {
  TOLLGATE_HOST: 'server.host',
  TOLLGATE_PORT: 'server.port',
  TOLLGATE_DATABASE_URL: 'storage.databaseUrl',
  TOLLGATE_REDIS_URL: 'storage.redisUrl',
};

/** TOLLGATE_ variables that are not options: the file's path, Compose's published port, the tests' and benchmarks' own. */
export const NON_OPTION_VARS: readonly string[] = ['TOLLGATE_CONFIG', 'TOLLGATE_PUBLISH_PORT'];
export const NON_OPTION_PREFIXES: readonly string[] = ['TOLLGATE_TEST_', 'TOLLGATE_BENCH_'];

type Schema = z.core.$ZodType;

/** Every leaf option of the schema (objects are walked; lists and scalars are leaves), in schema order. */
function walk(s: Schema, path: string, nullable: boolean, sensitive: Sensitivity | null, out: EnvOption[]): void {
  const meta = z.globalRegistry.get(s) as { sensitive?: Sensitivity } | undefined;
  const sens = meta?.sensitive ?? sensitive;
  const def = s._zod.def as z.core.$ZodTypeDef & { innerType?: Schema; shape?: Record<string, Schema>; values?: unknown[] };
  switch (def.type) {
    case 'default':
    case 'prefault':
    case 'optional':
      return walk(def.innerType!, path, nullable, sens, out);
    case 'nullable':
      return walk(def.innerType!, path, true, sens, out);
    case 'object':
      for (const [k, v] of Object.entries(def.shape!)) walk(v, path ? `${path}.${k}` : k, false, null, out);
      return;
    default:
      out.push({ path, env: envName(path), kind: kindOf(def), nullable, sensitive: sens });
  }
}

function kindOf(def: z.core.$ZodTypeDef & { values?: unknown[] }): EnvKind {
  if (def.type === 'number' || def.type === 'int') return 'number';
  if (def.type === 'boolean') return 'boolean';
  if (def.type === 'array') return 'list';
  if (def.type === 'literal' && typeof def.values?.[0] === 'boolean') return 'boolean';
  if (def.type === 'string' || def.type === 'enum' || def.type === 'literal') return 'string';
  throw new Error(`config-env: no environment form for a ${def.type} option`);
}

export function optionsOf(schema: Schema): EnvOption[] {
  const out: EnvOption[] = [];
  walk(schema, '', false, null, out);
  return out;
}

/** Every option of the configuration with its variable. */
export const ENV_OPTIONS: readonly EnvOption[] = optionsOf(ConfigSchema);
const BY_ENV = new Map(ENV_OPTIONS.map((o) => [o.env, o]));
export const OPTION_BY_PATH: ReadonlyMap<string, EnvOption> = new Map(ENV_OPTIONS.map((o) => [o.path, o]));

/** Every name the environment layer reads, with what it is; a second meaning of one name fails at load. */
export function knownNames(options: readonly EnvOption[]): Map<string, string> {
  const names = new Map<string, string>();
  const add = (name: string, what: string) => {
    const had = names.get(name);
    if (had !== undefined) throw new Error(`config-env: ${name} would mean both ${had} and ${what}`);
    names.set(name, what);
  };
  for (const o of options) {
    add(o.env, o.path);
    add(o.env + FILE_SUFFIX, `${o.path} (from a file)`);
  }
  for (const [alias, path] of Object.entries(ENV_ALIASES)) {
    add(alias, `${path} (short name)`);
    add(alias + FILE_SUFFIX, `${path} (short name, from a file)`);
  }
  for (const n of NON_OPTION_VARS) add(n, 'not an option');
  return names;
}
const KNOWN = knownNames(ENV_OPTIONS);

/** One value the environment sets: the option, the value read by its type, and the variable it came from. */
export interface EnvValue {
  readonly path: string;
  readonly value: unknown;
  readonly variable: string;
}

export interface EnvLayer {
  readonly values: EnvValue[];
  /** Problems that stop startup: a value of the wrong form, VAR and VAR_FILE both set, a file that cannot be read. */
  readonly errors: EnvError[];
  /** Reported and ignored: an unknown TOLLGATE_ variable, a short name overridden by the rule's name. */
  readonly warnings: string[];
}

export interface EnvError {
  readonly variable: string;
  readonly message: string;
}

type Env = Record<string, string | undefined>;

/** The environment's values for every option. An empty variable counts as unset (Compose's `${VAR:-}`). */
export function readEnv(env: Env): EnvLayer {
  const layer: EnvLayer = { values: [], errors: [], warnings: [] };
  const aliasesOf = new Map<string, string[]>();
  for (const [alias, path] of Object.entries(ENV_ALIASES)) aliasesOf.set(path, [...(aliasesOf.get(path) ?? []), alias]);
  for (const o of ENV_OPTIONS) {
    const found = [o.env, ...(aliasesOf.get(o.path) ?? [])].flatMap((name) => {
      const raw = rawValue(env, name, o, layer.errors);
      return raw === undefined ? [] : [raw];
    });
    if (found.length === 0) continue;
    const [used, ...ignored] = found;
    for (const other of ignored) {
      if (other.text !== used!.text) layer.warnings.push(`${other.variable} is ignored: ${used!.variable} sets ${o.path} too (and wins)`);
    }
    const value = parseValue(o, used!.variable, used!.text, layer.errors);
    if (value !== INVALID) layer.values.push({ path: o.path, value, variable: used!.variable });
  }
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith(ENV_PREFIX) || KNOWN.has(name) || NON_OPTION_PREFIXES.some((p) => name.startsWith(p))) continue;
    const near = nearestName(name);
    layer.warnings.push(`${name} is not a Tollgate setting and is ignored${near ? `; did you mean ${near}?` : ''}`);
  }
  return layer;
}

/** VAR, or the content of the file VAR_FILE names (trailing newlines trimmed); both set is an error. */
function rawValue(env: Env, name: string, o: EnvOption, errors: EnvError[]): { variable: string; text: string } | undefined {
  const direct = env[name];
  const file = env[name + FILE_SUFFIX];
  const hasDirect = direct !== undefined && direct !== '';
  const hasFile = file !== undefined && file !== '';
  if (hasDirect && hasFile) {
    errors.push({ variable: name, message: `${name}${FILE_SUFFIX} is set too; set one of them (${o.path})` });
    return undefined;
  }
  if (hasDirect) return { variable: name, text: direct };
  if (!hasFile) return undefined;
  try {
    return { variable: name + FILE_SUFFIX, text: readFileSync(file, 'utf8').replace(/[\r\n]+$/, '') };
  } catch (err) {
    errors.push({ variable: name + FILE_SUFFIX, message: `cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` });
    return undefined;
  }
}

const INVALID = Symbol('invalid');
const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** A variable's text as its option's type (README "Configuration": numbers, true/false, lists, `null`). */
export function parseValue(o: EnvOption, variable: string, text: string, errors: EnvError[]): unknown {
  if (o.nullable && text === 'null') return null;
  const shown = o.sensitive === 'secret' ? '' : `, got "${text}"`;
  switch (o.kind) {
    case 'string':
      return text;
    case 'number':
      if (NUMBER.test(text.trim())) return Number(text.trim());
      errors.push({ variable, message: `must be a number${shown}` });
      return INVALID;
    case 'boolean':
      if (/^(true|false)$/i.test(text.trim())) return text.trim().toLowerCase() === 'true';
      errors.push({ variable, message: `must be true or false${shown}` });
      return INVALID;
    case 'list':
      return parseList(variable, text, errors, shown);
  }
}

/** A JSON array, or comma-separated items (spaces around them trimmed, empty ones dropped). */
function parseList(variable: string, text: string, errors: EnvError[], shown: string): unknown {
  const t = text.trim();
  if (!t.startsWith('[')) return t.split(',').map((s) => s.trim()).filter((s) => s !== '');
  try {
    const v: unknown = JSON.parse(t);
    if (Array.isArray(v)) return v;
  } catch {
    // reported below
  }
  errors.push({ variable, message: `must be a JSON array or a comma-separated list${shown}` });
  return INVALID;
}

/** The known name closest to a mistyped one (edit distance after the prefix), if any is close enough to be a likely typo. */
export function nearestName(name: string): string | null {
  if (name.endsWith(FILE_SUFFIX)) {
    const base = nearestName(name.slice(0, -FILE_SUFFIX.length));
    return base && KNOWN.has(base + FILE_SUFFIX) ? base + FILE_SUFFIX : base;
  }
  const typed = name.slice(ENV_PREFIX.length);
  let best: string | null = null;
  let bestD = Infinity;
  for (const known of [...BY_ENV.keys(), ...Object.keys(ENV_ALIASES), ...NON_OPTION_VARS]) {
    const d = distance(typed, known.slice(ENV_PREFIX.length));
    if (d < bestD) [best, bestD] = [known, d];
  }
  return bestD <= Math.max(2, Math.ceil(typed.length / 2)) ? best : null;
}

/** Levenshtein distance: a dozen lines, not worth a dependency. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}
