import type { Clock } from '../../domain/clock.js';
import type { StorageLog } from '../backend.js';
import { WriteGate } from '../write-gate.js';

/*
 * The server's side of its writes: how long they wait, and what it logs when they fail.
 */

/**
 * How long a server write waits for a lock another connection holds (the CLI's writes take
 * milliseconds). Kept short because it runs on the event loop: a longer wait is a stall of
 * every request, and the WriteGate turns a lock held for long into fast refusals instead.
 * The CLI's connections keep db.ts's 5 s: a one-shot command should wait for the server.
 * A miss's own writes (no-wait.ts) do not wait inside SQLite at all: this is the budget of
 * their retries from a timer instead.
 */
export const SERVER_BUSY_TIMEOUT_MS = { main: 250, cache: 100 } as const;

/** A WriteGate that logs when a database's writes start failing and when they recover. */
export function loggedGate(name: string, clock: Clock, log: StorageLog | undefined, failing: string, recovered: string): WriteGate {
  return new WriteGate(name, {
    clock,
    onChange: (err) => (err ? log?.error({ err, database: name }, failing) : log?.info({ database: name }, recovered)),
  });
}

export const MAIN_GATE_MESSAGES = [
  'tollgate.db cannot be written: provider calls are refused (503 STORAGE_UNAVAILABLE) until it can; cache hits are still served',
  'tollgate.db can be written again: provider calls resume',
] as const;

export const CACHE_GATE_MESSAGES = ['cache.db cannot be written: answers are served without being stored until it can', 'cache.db can be written again'] as const;
