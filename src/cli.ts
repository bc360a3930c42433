#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { ConfigError } from './config.js';
import { registerCache } from './cli/cache.js';
import { registerConfig } from './cli/config.js';
import { registerKeys } from './cli/keys.js';
import { registerMigrate } from './cli/migrate.js';
import { registerRun } from './cli/run.js';
import { registerUsage } from './cli/usage.js';
import { CliError } from './cli/common.js';
import { StartupError } from './domain/startup-error.js';
import { VERSION } from './obs/version.js';

const program = new Command('tollgate')
  .description('Caching, rate- and credit-limiting gateway for the professional-network data API')
  .version(VERSION, '-V, --version', 'print the version')
  .option('-c, --config <file>', 'YAML config file (default: $TOLLGATE_CONFIG)')
  .option('--data-dir <dir>', 'data directory (default: $TOLLGATE_DATA_DIR or ./data)')
  .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent')
  .showHelpAfterError()
  .exitOverride();

registerRun(program);
registerKeys(program);
registerCache(program);
registerUsage(program);
registerMigrate(program);
registerConfig(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  if (err instanceof CliError || err instanceof ConfigError) {
    console.error(`tollgate: ${err.message}`);
    process.exit(2);
  }
  if (err instanceof StartupError) {
    console.error(`tollgate: ${err.message}`);
    process.exit(1);
  }
  console.error(err);
  process.exit(1);
}
