import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { ConfigSchema } from './config-schema.js';
import { OPTION_BY_PATH, readEnv } from './config-env.js';

export { ConfigSchema } from './config-schema.js';

/**
 * Configuration: built-in defaults ← YAML file ← environment ← flags, validated once and
 * frozen. A bad value stops startup with a message naming the field and where its value came
 * from. The options themselves (defaults, bounds) are config-schema.ts's; their environment
 * variables config-env.ts's.
 */
export type Config = z.infer<typeof ConfigSchema>;

/** One problem with the configuration: the option (or variable) and what is wrong. */
export interface ConfigIssue {
  readonly path: string;
  readonly message: string;
  /** Where the offending value came from, when it was set (not for a default or a missing value). */
  readonly source?: Source;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(
    message: string,
    readonly issues: readonly ConfigIssue[] = [],
  ) {
    super(message);
  }
}

/** Where an option's effective value comes from: `default`, `file:<path>`, `env:<VAR>` or `flag`. */
export type Source = 'default' | `file:${string}` | `env:${string}` | 'flag';

type Env = Record<string, string | undefined>;
type Tree = Record<string, unknown>;

export interface LoadOptions {
  /** Path of a YAML file; falls back to TOLLGATE_CONFIG. */
  file?: string | undefined;
  env?: Env;
  /** Highest precedence: dotted path → value, from command-line flags. */
  overrides?: Record<string, unknown>;
  /** Where warnings go (an unknown TOLLGATE_ variable...); stderr by default. */
  onWarning?: (message: string) => void;
}

export interface ResolvedConfig {
  readonly config: Readonly<Config>;
  /** The YAML file read, if any. */
  readonly file: string | null;
  /** The source of every value set by a layer above the defaults, by dotted path (a leaf, or a whole list or null). */
  readonly sources: ReadonlyMap<string, Source>;
  readonly warnings: readonly string[];
}

/**
 * Settings an earlier version read that no longer do anything: still accepted, so that a file
 * or environment written for that version loads, with a warning saying why it can go.
 */
export const RETIRED_SETTINGS: Readonly<Record<string, string>> = {
  'cache.recencyGrainMs':
    "has no effect any more and can be removed: eviction's order is exact without it (an entry hit since its place in the order was written is moved when eviction reaches it)",
};

/** What the process was configured with besides the values: for the startup log line. */
const reports = new WeakMap<object, { readonly warnings: readonly string[] }>();

export function loadConfig(opts: LoadOptions = {}): Readonly<Config> {
  const resolved = resolveConfig(opts);
  const warn = opts.onWarning ?? ((m: string) => process.stderr.write(`tollgate: warning: ${m}\n`));
  for (const w of resolved.warnings) warn(w);
  reports.set(resolved.config, { warnings: resolved.warnings });
  return resolved.config;
}

/** The warnings loadConfig reported for this configuration (none for one built otherwise). */
export function configWarnings(config: Readonly<Config>): readonly string[] {
  return reports.get(config)?.warnings ?? [];
}

/** Every layer merged and validated, with the source of each value set; throws ConfigError listing every problem. */
export function resolveConfig(opts: LoadOptions = {}): ResolvedConfig {
  const env = opts.env ?? process.env;
  const file = opts.file ?? (env.TOLLGATE_CONFIG || undefined);
  const sources = new Map<string, Source>();
  const tree: Tree = file ? readYaml(file) : {};
  if (file) for (const p of leafPaths(tree)) sources.set(p, `file:${file}`);
  const layer = readEnv(env);
  if (layer.errors.length > 0) {
    const issues = layer.errors.map((e): ConfigIssue => ({ path: e.variable, message: e.message, source: `env:${e.variable}` }));
    throw new ConfigError(`Invalid configuration:\n${issues.map((i) => `  ${i.path}: ${i.message}`).join('\n')}`, issues);
  }
  for (const v of layer.values) set(tree, sources, v.path, v.value, `env:${v.variable}`);
  for (const [path, value] of Object.entries(opts.overrides ?? {})) {
    if (value !== undefined) set(tree, sources, path, value, 'flag');
  }
  const retired = Object.entries(RETIRED_SETTINGS).flatMap(([path, why]) => (sources.has(path) ? [`${path} ${why}`] : []));
  return { config: validateConfig(tree, sources), file: file ?? null, sources, warnings: [...layer.warnings, ...retired] };
}

export function validateConfig(tree: unknown, sources?: ReadonlyMap<string, Source>): Readonly<Config> {
  const result = ConfigSchema.safeParse(tree);
  if (!result.success) {
    const issues = result.error.issues.map((i): ConfigIssue => {
      const path = i.path.join('.') || '(root)';
      const source = sources && sourceOf(sources, path);
      return source ? { path, message: i.message, source } : { path, message: i.message };
    });
    const lines = issues.map((i) => `  ${i.path}: ${i.message}${i.source ? ` [${i.source}]` : ''}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`, issues);
  }
  return deepFreeze(result.data);
}

/** The source of a path's value: its own, or that of the list or object it is part of. */
export function sourceOf(sources: ReadonlyMap<string, Source>, path: string): Source | undefined {
  for (let p = path; ; p = p.slice(0, p.lastIndexOf('.'))) {
    const s = sources.get(p);
    if (s || !p.includes('.')) return s;
  }
}

function readYaml(file: string): Tree {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`Cannot read config file ${file}: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    // Without the yaml package's code frames: they quote the offending lines, which may hold
    // upstream.apiKey or adminToken, into `config check`, `serve`'s stderr and from there the
    // logs. Its warnings (printed with a frame too) are not printed; the line number stays.
    doc = parseYaml(text, { prettyErrors: false, logLevel: 'error' });
  } catch (err) {
    throw new ConfigError(`Config file ${file} is not valid YAML: ${yamlProblem(err, text)}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(`Config file ${file} must be a mapping`);
  return doc as Tree;
}

/** A YAML error's own words and its line, never the text around it. */
function yamlProblem(err: unknown, text: string): string {
  const { message, pos } = err as { message?: unknown; pos?: unknown };
  const what = typeof message === 'string' ? message.split('\n')[0]! : 'unreadable';
  const at = Array.isArray(pos) && typeof pos[0] === 'number' ? ` (line ${text.slice(0, pos[0]).split('\n').length})` : '';
  return what + at;
}

/** The paths a file sets: its leaves, where a list or a null (or an unknown key's value) is one leaf. */
function leafPaths(o: unknown, prefix = ''): string[] {
  const isOption = prefix !== '' && OPTION_BY_PATH.has(prefix);
  if (isOption || o === null || typeof o !== 'object' || Array.isArray(o)) return prefix ? [prefix] : [];
  return Object.entries(o).flatMap(([k, v]) => leafPaths(v, prefix ? `${prefix}.${k}` : k));
}

function set(tree: Tree, sources: Map<string, Source>, path: string, value: unknown, source: Source): void {
  const parts = path.split('.');
  let node = tree;
  for (let i = 0; i < parts.length - 1; i++) {
    const part = parts[i]!;
    const next = node[part];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) {
      // A null (or a scalar) the file set is replaced by the object this value is part of.
      node[part] = {};
      sources.delete(parts.slice(0, i + 1).join('.'));
    }
    node = node[part] as Tree;
  }
  node[parts[parts.length - 1]!] = value;
  for (const p of [...sources.keys()]) if (p.startsWith(path + '.')) sources.delete(p);
  sources.set(path, source);
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}
