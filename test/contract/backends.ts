import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateConfig } from '../../src/config.js';
import { FakeClock, type Clock } from '../../src/domain/clock.js';
import { openBackend } from '../../src/store/open.js';
import type { StorageBackend } from '../../src/store/ports.js';
import type { Pool } from 'pg';
import { PgResponseCache } from '../../src/store/postgres/cache.js';
import { PgChangeFeed } from '../../src/store/postgres/change-feed.js';
import { PgCredits } from '../../src/store/postgres/credits.js';
import { PgKeys } from '../../src/store/postgres/keys.js';
import { LastUsedBatcher } from '../../src/store/last-used.js';
import { PgLedger } from '../../src/store/postgres/ledger.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { migrate } from '../../src/store/postgres/schema.js';
import { freshDatabase } from '../helpers/postgres.js';
import type { RedisClientType } from 'redis';
import { RedisCallClaims } from '../../src/store/redis/call-claims.js';
import { RedisRateCounters } from '../../src/store/redis/rate-counters.js';
import { freshPrefix, redisClient } from '../helpers/redis.js';

/*
 * The backends every contract suite (test/contract/*.contract.ts) runs against. A new backend
 * (PostgreSQL + Redis, issue #12's multi-replica follow-up) is one more entry in BACKENDS.
 */

export type SuiteName = 'keys' | 'rates' | 'credits' | 'ledger' | 'cache' | 'changes' | 'claims' | 'backend';
export const ALL_SUITES: readonly SuiteName[] = ['keys', 'rates', 'credits', 'ledger', 'cache', 'changes', 'claims', 'backend'];

export interface OpenOptions {
  /** The clock of every handle on the storage (a new FakeClock at 2026-01-01 when absent). */
  readonly clock?: FakeClock;
}

/** One process's view of a storage: its ports, and the ways a test ends or multiplies it. */
export interface Handle {
  readonly backend: StorageBackend;
  readonly clock: FakeClock;
  /** Another process on the same storage (its own connections and memory). Usable after this one closed or crashed. */
  peer(): Promise<Handle>;
  /** Die: connections dropped without a flush; what was only in memory is lost. */
  crash(): Promise<void>;
  /** Close every handle of this storage still open and delete the storage. */
  cleanup(): Promise<void>;
}

export interface BackendFactory {
  readonly name: string;
  /** The contract suites this backend runs: data, so that no suite is ever `it.skip`ped. */
  readonly suites: readonly SuiteName[];
  open(opts?: OpenOptions): Promise<Handle>;
}

/** A shared set of open handles per storage, so that cleanup closes the peers too. */
interface Storage {
  readonly dir: string;
  readonly open: Set<{ crash(): Promise<void> }>;
}

const sqlite: BackendFactory = {
  name: 'sqlite',
  suites: ALL_SUITES,
  async open(opts = {}) {
    const storage: Storage = { dir: mkdtempSync(join(tmpdir(), 'tollgate-contract-')), open: new Set() };
    return sqliteHandle(storage, opts.clock ?? new FakeClock());
  },
};

/**
 * The same backend answering every call a port may answer later with a promise, run a turn
 * later, as a network backend does: the suites must hold whichever way a backend answers.
 */
const sqliteAnsweringLater: BackendFactory = {
  name: 'sqlite, answering with promises',
  suites: ALL_SUITES,
  open: async (opts) => later(await sqlite.open(opts)),
};

/**
 * The shared backend (PostgreSQL; issue #13) as far as it is built: keys, credits, the ledger,
 * the cache and the change feed. Its handle
 * carries only the ports built so far, and it runs only their suites.
 */
const postgres: BackendFactory = {
  name: 'postgres',
  suites: ['keys', 'credits', 'ledger', 'cache', 'changes'],
  async open(opts = {}) {
    const db = await freshDatabase();
    const clock = opts.clock ?? new FakeClock();
    const pools = new Set<Pool>();
    const feeds = new Set<PgChangeFeed>();
    const handle = async (): Promise<Handle> => {
      const pool = openPool(db.url);
      pools.add(pool);
      await migrate(pool);
      const credits = new PgCredits(pool);
      const ledger = new PgLedger(pool, credits);
      const cache = await PgResponseCache.open(pool);
      const changes = await PgChangeFeed.open(db.url);
      feeds.add(changes);
      const keys = new PgKeys(pool, clock);
      const backend = { kind: 'postgres', keys, lastUsed: new LastUsedBatcher(keys), credits, ledger, cache, changes } as Partial<StorageBackend> as StorageBackend;
      const end = async () => {
        if (feeds.delete(changes)) await changes.close();
        if (pools.delete(pool)) await pool.end();
      };
      return {
        backend,
        clock,
        peer: handle,
        crash: end,
        cleanup: async () => {
          for (const f of [...feeds]) await f.close();
          feeds.clear();
          for (const p of [...pools]) await p.end();
          pools.clear();
          await db.drop();
        },
      };
    };
    return handle();
  },
};

/** The shared backend's Redis part (issue #13) as far as it is built: the rate counters and the call claims. */
const redis: BackendFactory = {
  name: 'redis',
  suites: ['rates', 'claims'],
  async open(opts = {}) {
    const keys = freshPrefix();
    const clock = opts.clock ?? new FakeClock();
    const clients = new Map<RedisClientType, RedisCallClaims>();
    const end = async (client: RedisClientType) => {
      const claims = clients.get(client);
      if (!claims) return;
      clients.delete(client);
      await claims.close();
      client.destroy();
    };
    const handle = async (): Promise<Handle> => {
      const client = await redisClient();
      const claims = new RedisCallClaims(client, keys.prefix);
      clients.set(client, claims);
      const backend = { kind: 'redis', rates: new RedisRateCounters(client, keys.prefix), claims } as Partial<StorageBackend> as StorageBackend;
      return {
        backend,
        clock,
        peer: handle,
        crash: () => end(client),
        cleanup: async () => {
          for (const c of [...clients.keys()]) await end(c);
          await keys.drop();
        },
      };
    };
    return handle();
  },
};

export const BACKENDS: readonly BackendFactory[] = [sqlite, sqliteAnsweringLater, postgres, redis];

/** Per port, the methods whose answer is a MaybePromise (the others answer at once by contract). */
const MAYBE_LATER: Record<string, readonly string[]> = {
  keys: ['findBySecret', 'get', 'list', 'create', 'update', 'rotate', 'revoke'],
  lastUsed: ['flush'],
  rates: ['counts', 'add', 'take', 'flush'],
  credits: ['used', 'reserved', 'states', 'tryReserve'],
  ledger: ['record', 'flush', 'recoverAbandoned'],
  cache: ['get', 'put', 'purge', 'maintain', 'flush'],
  claims: ['claim', 'release'],
};

function later(h: Handle): Handle {
  const turn = () => new Promise<void>((r) => setImmediate(r));
  const port = <T extends object>(target: T, methods: readonly string[]): T =>
    new Proxy(target, {
      get(t, name, receiver) {
        const v = Reflect.get(t, name, receiver) as unknown;
        if (typeof v !== 'function') return v;
        if (!methods.includes(name as string)) return v.bind(t);
        return async (...args: unknown[]) => {
          await turn();
          return v.apply(t, args);
        };
      },
    });
  const b = h.backend;
  const ports = Object.fromEntries(Object.entries(MAYBE_LATER).map(([name, methods]) => [name, port(b[name as keyof StorageBackend] as object, methods)]));
  const backend = { ...ports, kind: b.kind, changes: b.changes, health: async () => b.health(), gauges: () => b.gauges(), flush: () => b.flush(), close: () => b.close() } as StorageBackend;
  return { ...h, backend, peer: async () => later(await h.peer()) };
}

function sqliteHandle(storage: Storage, clock: FakeClock): Handle {
  const built = openSqlite(storage.dir, clock);
  const self = { crash: built.crash };
  storage.open.add(self);
  return {
    backend: built.backend,
    clock,
    peer: async () => sqliteHandle(storage, clock),
    crash: async () => {
      storage.open.delete(self);
      await built.crash();
    },
    cleanup: async () => {
      for (const h of [...storage.open]) await h.crash();
      storage.open.clear();
      rmSync(storage.dir, { recursive: true, force: true });
    },
  };
}

/** The embedded backend as `serve` opens it (store/open.ts), on the storage's data directory. */
function openSqlite(dir: string, clock: Clock): { backend: StorageBackend; crash(): Promise<void> } {
  const config = validateConfig({ dataDir: dir, upstream: { url: 'http://127.0.0.1:1', apiKey: 'contract-test-key-0000' } });
  const backend = openBackend(config, { role: 'server', clock });
  return { backend, crash: () => backend.abandon() };
}
