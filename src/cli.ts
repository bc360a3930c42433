#!/usr/bin/env node
import { Command, Option } from 'commander';
import { ConfigSchema } from './config-schema.js';
import { registerAudit } from './cli/audit.js';
import { registerCache } from './cli/cache.js';
import { cliFailure, reportFailure, wantsJson } from './cli/exit.js';
import { registerConfig } from './cli/config.js';
import { registerKeys } from './cli/keys.js';
import { registerTeams } from './cli/teams.js';
import { registerNotifications } from './cli/notifications.js';
import { registerMeta } from './cli/meta.js';
import { registerMigrate } from './cli/migrate.js';
import { registerRun } from './cli/run.js';
import { registerUsage } from './cli/usage.js';
import { VERSION } from './obs/version.js';

// Errors in JSON too when the command line asks for JSON: commander's own usage messages (and
// the help it shows after them) are then left to reportFailure, which prints one JSON object.
const json = wantsJson(process.argv.slice(2));

const program = new Command('tollgate')
  .description('Caching, rate- and credit-limiting gateway for the professional-network data API')
  .version(VERSION, '-V, --version', 'print the version')
  .option('-c, --config <file>', 'YAML config file (default: $TOLLGATE_CONFIG)')
  .option('--data-dir <dir>', 'data directory (default: $TOLLGATE_DATA_DIR or ./data)')
  .addOption(new Option('--log-level <level>', 'log level (default: $TOLLGATE_LOG_LEVEL or info)').choices(ConfigSchema.shape.logLevel.unwrap().options))
  .showHelpAfterError(json ? false : '(run with --help for usage and examples)')
  .configureOutput(json ? { writeErr: () => {}, outputError: () => {} } : {})
  // Settings above are copied to each subcommand as it is added, so they come first.
  .exitOverride()
  .addHelpText(
    'after',
    `
Exit codes: 0 success, 1 the command failed (retrying may help), 2 a usage or configuration
error (fix the command line or the configuration). With --json, output is JSON on stdout and
an error is one JSON line on stderr: {"error":{"code","message","exit_code"}}.

Examples:
  # try it: the built-in provider simulator, a gateway and a demo key
  $ tollgate demo
  # shell completion for bash
  $ source <(tollgate completion bash)`,
  );

registerRun(program);
registerKeys(program);
registerTeams(program);
registerCache(program);
registerUsage(program);
registerAudit(program);
registerNotifications(program);
registerMigrate(program);
registerMeta(program);
registerConfig(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  const f = cliFailure(err);
  reportFailure(f, err, json);
  process.exit(f.exitCode);
}
