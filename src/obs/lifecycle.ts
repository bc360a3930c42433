import type { FastifyInstance } from 'fastify';
import type { Logger } from './logger.js';

/**
 * Stop accepting connections and wait for in-flight requests, at most `graceMs`; then cut
 * the connections still open so the rest of the shutdown (flush, close databases) runs
 * before an orchestrator's SIGKILL. Idle keep-alive sockets are closed at once (Node's
 * server.close() and the server's Connection: close while draining), so they never hold it up.
 */
export async function drainHttp(server: FastifyInstance, graceMs: number, log: Logger): Promise<void> {
  const started = Date.now();
  const timer = setTimeout(() => {
    log.warn({ grace_ms: graceMs }, 'shutdown grace period over; closing the connections still open');
    server.server.closeAllConnections();
  }, graceMs);
  timer.unref();
  try {
    await server.close();
  } finally {
    clearTimeout(timer);
  }
  log.info({ duration_ms: Date.now() - started }, 'http server drained');
}

export interface Stoppable {
  readonly logger: Logger;
  readonly config: { readonly server: { readonly shutdownGraceMs: number } };
  close(): Promise<void>;
}

/** Time beyond the grace period that flushing and closing the databases may take. */
const CLOSE_MARGIN_MS = 5_000;

/**
 * SIGTERM/SIGINT: drain and close `app` (which flushes everything it owns), run `extra`,
 * exit 0. A second signal, or a close that outlives grace + margin, exits 1 at once: an
 * operator pressing Ctrl-C twice means it, and a hung close must not outlast the orchestrator.
 */
export function closeOnSignals(app: Stoppable, extra: () => Promise<void> = async () => {}, exit: (code: number) => void = process.exit): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      app.logger.warn({ signal }, 'second signal during shutdown; exiting now');
      exit(1);
      return;
    }
    stopping = true;
    app.logger.info({ signal, grace_ms: app.config.server.shutdownGraceMs }, 'shutting down: draining in-flight requests');
    const backstop = setTimeout(() => {
      app.logger.error('shutdown did not finish in time; exiting');
      exit(1);
    }, app.config.server.shutdownGraceMs + CLOSE_MARGIN_MS);
    backstop.unref();
    app
      .close()
      .then(extra)
      .then(
        () => {
          app.logger.info('shutdown complete');
          exit(0);
        },
        (err: unknown) => {
          app.logger.error({ err }, 'shutdown failed');
          exit(1);
        },
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/** How long close() waits for the handlers of cut provider calls to record their charges. */
export const SETTLE_AT_CLOSE_MS = 2_000;

/** Resolves once `done()` holds, looked at every few milliseconds after a turn, or after `maxMs`. */
export async function settled(done: () => boolean, maxMs: number): Promise<void> {
  const until = Date.now() + maxMs;
  await new Promise((r) => setImmediate(r));
  while (!done() && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
}
