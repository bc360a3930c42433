import type { WriteGate } from '../write-gate.js';
import type { ReadWorker } from './read-worker.js';
import type { TurnReads } from './turn-reads.js';

/** How CacheStore (cache.ts) is built: the server's parts, and the bounds of its maintenance steps. */
export interface CacheStoreOptions {
  /**
   * Bound of the in-memory copy of recently read or written entries, in bytes of heap (each
   * entry charged two bytes per character of its text plus 256). 0 disables it.
   */
  memoryMaxBytes?: number;
  /** The server's: after a failed write, puts are skipped (not stored) until it recovers. */
  gate?: WriteGate;
  /** Runs readStats()'s reads off the event loop (the server's). */
  reader?: ReadWorker;
  /**
   * Bounds of one step of the maintenance pass (a transaction): hit-count rows written, and
   * milliseconds after which it starts no further row. Defaults: MAINTENANCE_STEP.
   */
  maintenanceStep?: { rows: number; budgetMs: number };
  /** Entries of the LRU index's head eviction reads at a time. Default EVICT_BATCH (cache-eviction.ts); a test makes it small. */
  evictionHead?: number;
  /** The server's: hit reads on a connection of their own, a turn's sharing one transaction (turn-reads.ts). */
  turnReads?: TurnReads;
}

/**
 * One step of the maintenance pass. At a million entries a hit-count update costs ~10 µs and
 * its commit as much again (a random page each); the budget bounds the rows' work, the row
 * count the commit's: a step of 5–10 ms, measured on a loaded machine.
 */
export const MAINTENANCE_STEP = { rows: 500, budgetMs: 4 } as const;
