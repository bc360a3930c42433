import { CommanderError } from 'commander';
import { ConfigError } from '../config.js';
import { StartupError } from '../domain/startup-error.js';

/**
 * The CLI's one exit-code scheme (README "Command line"): 0 success, 1 the command was right
 * but could not be carried out (storage unreachable or locked, a copy refused, a bug), 2 the
 * command line or the configuration is wrong and must be changed before a retry can succeed.
 * Scripts can retry on 1 and must not on 2.
 */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** What `--json` mode prints on stderr for a failure, and the code it exits with. */
export type CliErrorCode = 'USAGE_ERROR' | 'CONFIG_INVALID' | 'NOT_FOUND' | 'CONFLICT' | 'TEAM_NOT_EMPTY' | 'RUNTIME_ERROR' | 'INTERNAL_ERROR';

/**
 * A mistake on the command line, printed without a stack trace: exit 2. `code` tells the
 * kind apart in `--json` mode; NOT_FOUND, CONFLICT and TEAM_NOT_EMPTY are the admin API's codes
 * for the same refusals (an id that names no key, a revoked key rotated, a team with keys deleted).
 */
export class CliError extends Error {
  override name = 'CliError';

  constructor(
    message: string,
    readonly code: Extract<CliErrorCode, 'USAGE_ERROR' | 'NOT_FOUND' | 'CONFLICT' | 'TEAM_NOT_EMPTY'> = 'USAGE_ERROR',
  ) {
    super(message);
  }
}

export interface CliFailure {
  readonly exitCode: number;
  readonly code: CliErrorCode;
  readonly message: string;
  /** Printed too in human mode: an unexpected error is a bug to report with its stack. */
  readonly stack?: string;
}

/** Commander's own usage errors say `error: …`; the prefix is ours to add. */
const commanderMessage = (err: CommanderError): string => {
  if (err.code === 'commander.help') return 'a command is required; see --help';
  return err.message.replace(/^error: /, '');
};

/** Classify anything an action or the parser threw. */
export function cliFailure(err: unknown): CliFailure {
  if (err instanceof CommanderError) {
    // --help and --version end parsing with exit code 0; everything else commander refuses
    // (unknown command or option, missing argument or required option, a bare command group)
    // is a usage error, which commander itself would exit 1 for.
    if (err.exitCode === 0) return { exitCode: EXIT.ok, code: 'USAGE_ERROR', message: '' };
    return { exitCode: EXIT.usage, code: 'USAGE_ERROR', message: commanderMessage(err) };
  }
  if (err instanceof CliError) return { exitCode: EXIT.usage, code: err.code, message: err.message };
  if (err instanceof ConfigError) return { exitCode: EXIT.usage, code: 'CONFIG_INVALID', message: err.message };
  if (err instanceof StartupError) return { exitCode: EXIT.failure, code: 'RUNTIME_ERROR', message: err.message };
  const e = err instanceof Error ? err : new Error(String(err));
  return { exitCode: EXIT.failure, code: 'INTERNAL_ERROR', message: e.message, stack: e.stack };
}

/**
 * Print a failure on stderr: one `tollgate: …` line, or in `--json` mode one line of JSON
 * `{"error":{"code","message","exit_code"}}`, always the last line of stderr (notes such as
 * `tollgate: using <path>` may come before it). Commander has printed its own usage errors
 * already in human mode.
 */
export function reportFailure(f: CliFailure, err: unknown, json: boolean): void {
  if (f.exitCode === EXIT.ok) return;
  if (json) {
    if (f.stack) console.error(f.stack);
    console.error(JSON.stringify({ error: { code: f.code, message: f.message, exit_code: f.exitCode } }));
    return;
  }
  if (err instanceof CommanderError) return;
  if (f.stack) console.error(err);
  else console.error(`tollgate: ${f.message}`);
}

/** `--json` anywhere before a `--` puts errors in JSON too, whichever command it belongs to. */
export function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--json');
}
