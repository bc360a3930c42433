import { loadConfig, type Config } from '../config.js';

/** A user mistake on the command line: printed without a stack trace, exit code 2. */
export class CliError extends Error {
  override name = 'CliError';
}

export interface GlobalOpts {
  config?: string;
  dataDir?: string;
  port?: string;
  host?: string;
  logLevel?: string;
  upstreamUrl?: string;
}

/** Flags are the highest-precedence layer of configuration (DESIGN §7). */
export function configFrom(o: GlobalOpts): Readonly<Config> {
  return loadConfig({
    file: o.config,
    overrides: {
      dataDir: o.dataDir,
      'server.port': o.port === undefined ? undefined : portNumber(o.port),
      'server.host': o.host,
      logLevel: o.logLevel,
      'upstream.url': o.upstreamUrl,
    },
  });
}

export function portNumber(v: string): number {
  if (!/^\d{1,5}$/.test(v) || Number(v) > 65535) throw new CliError(`--port: expected 0..65535, got '${v}'`);
  return Number(v);
}
