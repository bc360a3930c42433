import type { Command } from 'commander';
import { upstreamSettings } from '../upstream/settings.js';
import { OPTION_BY_PATH, readEnv, type Sensitivity } from '../config-env.js';
import { ConfigError, resolveConfig, sourceOf, type ConfigIssue } from '../config.js';
import { maskPasswords } from '../domain/url-password.js';
import { examples, jsonOption, type GlobalOpts } from './common.js';

/** One option as `config check` shows it. */
interface Row {
  readonly option: string;
  readonly value: unknown;
  readonly source: string;
  /** The option's environment variable (for a null object, its leaves' variables). */
  readonly env: string | null;
}

const MASK = '********';
const PRECEDENCE = 'flags > environment > file > defaults';

/** `tollgate config check`: the configuration `serve` would run with, where each value comes from, secrets masked. */
export function registerConfig(program: Command): void {
  const config = examples(program.command('config').description('inspect the configuration'), [
    ['the configuration serve would run with, and where each value comes from', 'tollgate config check'],
  ]);
  const check = config
    .command('check')
    .description('print the effective configuration with the source of each value (secrets masked); exit 2 with the problems if it is invalid');
  examples(jsonOption(check), [
    ['check the configuration of the environment and ./tollgate.yaml', 'tollgate config check'],
    ['check a file, for a script (exit 0 valid, 2 invalid: every problem listed with its source)', 'tollgate --config /etc/tollgate/tollgate.yaml config check --json'],
    ['see an environment variable take effect', 'TOLLGATE_UPSTREAM_MAX_CONCURRENCY=64 tollgate config check'],
  ]).action(function (this: Command, o: { json?: boolean }) {
      const g = this.optsWithGlobals<GlobalOpts>();
      const warnings = readEnv(process.env).warnings;
      let rows: Row[];
      let file: string | null;
      try {
        const resolved = resolveConfig({ file: g.config, overrides: { dataDir: g.dataDir, logLevel: g.logLevel } });
        upstreamSettings(resolved.config);
        file = resolved.file;
        rows = leaves(resolved.config).map(([option, value]) => ({
          option,
          value: masked(OPTION_BY_PATH.get(option)?.sensitive ?? null, value),
          source: sourceOf(resolved.sources, option) ?? 'default',
          env: envOf(option),
        }));
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        const errors = issuesOf(err);
        if (o.json) console.log(JSON.stringify({ valid: false, errors, warnings }, null, 2));
        else for (const w of warnings) console.error(`tollgate: warning: ${w}`);
        throw err;
      }
      if (o.json) return console.log(JSON.stringify({ valid: true, file, precedence: PRECEDENCE, options: rows, warnings }, null, 2));
      console.log(render(rows, file, warnings));
    });
}

/** The problems of a ConfigError; one without a list (upstream.url missing for serve) is one problem. */
function issuesOf(err: ConfigError): Array<{ option: string; message: string; source: string | null }> {
  const issues: readonly ConfigIssue[] = err.issues.length > 0 ? err.issues : [{ path: '(configuration)', message: err.message.replace(/^Invalid configuration:\n\s*/, '') }];
  return issues.map((i) => ({ option: i.path, message: i.message, source: i.source ?? null }));
}

/** An option's variable; for a null object set leaf by leaf (upstream.rateLimit), its leaves' variables. */
function envOf(option: string): string | null {
  const own = OPTION_BY_PATH.get(option)?.env;
  if (own) return own;
  const parts = [...OPTION_BY_PATH.values()].filter((o) => o.path.startsWith(option + '.')).map((o) => o.env);
  return parts.length > 0 ? parts.join(', ') : null;
}

/** The effective values by dotted path; a list or a null is one value. */
function leaves(o: unknown, prefix = ''): Array<[string, unknown]> {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return [[prefix, o]];
  return Object.entries(o).flatMap(([k, v]) => leaves(v, prefix ? `${prefix}.${k}` : k));
}

/** A secret is shown as set or not; a URL keeps everything but its password. */
export function masked(sensitive: Sensitivity | null, value: unknown): unknown {
  // A list of objects (notifications.webhooks): each one's `secret` masked, and the password of
  // its URL (a receiver behind basic auth), as every other URL's; the rest shown.
  if (sensitive === 'secret' && Array.isArray(value)) return value.map(maskedWebhook);
  if (value === null || sensitive === null || typeof value !== 'string') return value;
  if (sensitive === 'secret') return MASK;
  return maskedUrl(value);
}

function maskedWebhook(v: unknown): unknown {
  if (!v || typeof v !== 'object' || !('secret' in v)) return v;
  const url = (v as { url?: unknown }).url;
  return { ...v, ...(typeof url === 'string' ? { url: maskedUrl(url) } : {}), secret: MASK };
}

function maskedUrl(value: string): string {
  try {
    return maskPasswords(value, MASK);
  } catch {
    return MASK;
  }
}

function render(rows: Row[], file: string | null, warnings: readonly string[]): string {
  const cols = (r: Row) => [r.option, JSON.stringify(r.value), r.source, r.env ?? '-'];
  const table = [['OPTION', 'VALUE', 'SOURCE', 'VARIABLE'], ...rows.map(cols)];
  const widths = [0, 1, 2].map((i) => Math.max(...table.map((t) => t[i]!.length)));
  const lines = [
    `Configuration valid (file: ${file ?? 'none'}; precedence: ${PRECEDENCE}; secrets masked)`,
    '',
    ...table.map((t) => t.map((c, i) => (i < 3 ? c.padEnd(widths[i]!) : c)).join('  ')),
  ];
  if (warnings.length > 0) lines.push('', 'Warnings:', ...warnings.map((x) => `  ${x}`));
  return lines.join('\n');
}
