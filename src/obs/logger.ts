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

/** Lines kept until this many bytes are waiting (or LOG_FLUSH_MS has passed) are written as one. */
export const LOG_CHUNK_BYTES = 4096;
/** The longest a line waits in memory: what a `kill -9` can lose (README "Logs"). */
export const LOG_FLUSH_MS = 100;

/**
 * stdout, written in chunks of about LOG_CHUNK_BYTES, and at least every LOG_FLUSH_MS (pino's
 * own sonic-boom). Under a steady load most event-loop turns answer one request, and a write
 * per turn was 8.2 µs of a hit's CPU in the constant-rate profile, 1.6 µs so (BENCHMARKS.md
 * §9). What waits is written when the process exits, whatever makes it exit; only `kill -9`
 * (or a lost machine) loses lines, at most LOG_FLUSH_MS of them, as with Envoy's or nginx's
 * buffered access logs.
 */
export function stdoutDestination(fd: number = process.stdout.fd ?? 1): pino.DestinationStream {
  // Written synchronously when due: a write handed to libuv's thread pool cost the event loop more than the write itself.
  const out = pino.destination({ dest: fd, sync: true, minLength: LOG_CHUNK_BYTES, periodicFlush: LOG_FLUSH_MS });
  // pino flushes an asynchronous destination at exit by itself, a synchronous one that keeps lines not.
  if (keeping.size === 0) process.once('exit', flushKept);
  keeping.add(out);
  out.once('close', () => keeping.delete(out));
  return out;
}

const keeping = new Set<ReturnType<typeof pino.destination>>();
function flushKept(): void {
  for (const out of keeping) {
    try {
      out.flushSync();
    } catch {
      // Exiting: a destination that cannot be written to any more has nobody left to tell.
    }
  }
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const opts: LoggerOptions = {
    level,
    base: { svc: 'tollgate' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return pino(opts, destination ?? stdoutDestination());
}

export type { Logger };
