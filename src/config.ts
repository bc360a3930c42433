import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { ConfigSchema } from './config-schema.js';

export { ConfigSchema } from './config-schema.js';

/**
 * Configuration: built-in defaults ← YAML file ← environment ← flags, validated once and
 * frozen. A bad value stops startup with a message naming the field. The options themselves
 * (defaults, bounds) are config-schema.ts's.
 */
export type Config = z.infer<typeof ConfigSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;
type Tree = Record<string, unknown>;

/** Environment variables (DESIGN §7) and the config path each one overrides. */
const ENV_MAP: ReadonlyArray<readonly [string, string, 'string' | 'int']> = [
  ['TOLLGATE_HOST', 'server.host', 'string'],
  ['TOLLGATE_PORT', 'server.port', 'int'],
  ['TOLLGATE_DATA_DIR', 'dataDir', 'string'],
  ['TOLLGATE_DATABASE_URL', 'storage.databaseUrl', 'string'],
  ['TOLLGATE_REDIS_URL', 'storage.redisUrl', 'string'],
  ['TOLLGATE_UPSTREAM_URL', 'upstream.url', 'string'],
  ['TOLLGATE_UPSTREAM_API_KEY', 'upstream.apiKey', 'string'],
  ['TOLLGATE_ADMIN_TOKEN', 'adminToken', 'string'],
  ['TOLLGATE_LOG_LEVEL', 'logLevel', 'string'],
  ['TOLLGATE_METRICS_TOKEN', 'metrics.token', 'string'],
];

export interface LoadOptions {
  /** Path of a YAML file; falls back to TOLLGATE_CONFIG. */
  file?: string | undefined;
  env?: Env;
  /** Highest precedence: dotted path → value, from command-line flags. */
  overrides?: Record<string, unknown>;
}

export function loadConfig(opts: LoadOptions = {}): Readonly<Config> {
  const env = opts.env ?? process.env;
  const file = opts.file ?? env.TOLLGATE_CONFIG;
  const tree: Tree = file ? readYaml(file) : {};
  for (const [name, path, type] of ENV_MAP) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    setPath(tree, path, type === 'int' ? intFromEnv(name, raw) : raw);
  }
  for (const [path, value] of Object.entries(opts.overrides ?? {})) {
    if (value !== undefined) setPath(tree, path, value);
  }
  return validateConfig(tree);
}

export function validateConfig(tree: unknown): Readonly<Config> {
  const result = ConfigSchema.safeParse(tree);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return deepFreeze(result.data);
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
    doc = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`Config file ${file} is not valid YAML: ${(err as Error).message}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(`Config file ${file} must be a mapping`);
  return doc as Tree;
}

function intFromEnv(name: string, raw: string): number {
  if (!/^[0-9]+$/.test(raw)) throw new ConfigError(`Invalid configuration:\n  ${name}: must be an integer, got "${raw}"`);
  return Number(raw);
}

function setPath(tree: Tree, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = tree;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (typeof next !== 'object' || next === null) node[part] = {};
    node = node[part] as Tree;
  }
  node[parts[parts.length - 1]!] = value;
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}
