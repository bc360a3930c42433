import { pino, type Logger, type LoggerOptions } from 'pino';

/**
 * Paths redacted from every log line. The provider key and client keys must never reach a
 * log: headers are redacted wherever they appear, and config objects are never logged whole.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'headers.authorization',
  'authorization',
  'apiKey',
  'upstream.apiKey',
  '*.apiKey',
  'adminToken',
  '*.adminToken',
  'key',
  'secret',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const opts: LoggerOptions = {
    level,
    base: { svc: 'tollgate' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(opts, destination) : pino(opts);
}

export type { Logger };
