import type { ResponseCache } from '../ports.js';
import type { WriteGate } from '../write-gate.js';
import { openCacheDb, openServingCacheDb } from './cache-file.js';
import { CacheStore } from './cache.js';
import type { DB } from './db.js';
import type { PartOptions } from './main-stores.js';
import { CACHE_GATE_MESSAGES, loggedGate, SERVER_BUSY_TIMEOUT_MS } from './server-writes.js';
import { ServingCache } from './serving-cache.js';
import { NoWaitWrites } from './no-wait.js';
import { TurnReads } from './turn-reads.js';

/** cache.db and its store, with the port the backend hands out. */
export class CacheStores {
  readonly db: DB;
  /** The server's; null for a one-shot command. */
  readonly gate: WriteGate | null;
  readonly store: CacheStore;
  /** The server's purges in batches (ServingCache); a command's is the store. */
  readonly port: ResponseCache;
  /** The server's hit reads (turn-reads.ts); null for a command, and for a database in memory (a second connection would open another). */
  private readonly reads: TurnReads | null = null;

  /** `upstreamUrl`: the server's provider, whose answers alone it serves (cache-file.ts). */
  constructor(opts: PartOptions, upstreamUrl: string) {
    const { config, clock, log } = opts;
    if (opts.server) {
      // As tollgate.db: no checkpoint on the request thread, and a short wait for a lock.
      this.db = openServingCacheDb(config, upstreamUrl, log, { autoCheckpoint: false, busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS.cache, mustExist: !opts.create });
      this.gate = loggedGate('cache.db', clock, log, ...CACHE_GATE_MESSAGES);
      try {
        if (!this.db.memory) this.reads = new TurnReads(this.db.name, SERVER_BUSY_TIMEOUT_MS.cache);
        this.store = new CacheStore(this.db, {
          memoryMaxBytes: config.cache.memoryMaxBytes,
          gate: this.gate,
          reader: opts.reader ?? undefined,
          turnReads: this.reads ?? undefined,
        });
      } catch (err) {
        // Not yet the backend's: nothing else would close them.
        this.close();
        throw err;
      }
      this.port = new ServingCache(this.store, new NoWaitWrites(this.db, this.gate));
    } else {
      this.db = openCacheDb(config, log, { mustExist: !opts.create });
      this.gate = null;
      // A one-shot command reads each entry at most once: nothing to keep in memory.
      this.store = new CacheStore(this.db, { memoryMaxBytes: 0 });
      this.port = this.store;
    }
  }

  /** Both connections; a second call does nothing. */
  close(): void {
    this.reads?.close();
    this.db.close();
  }
}
