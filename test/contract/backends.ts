import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock, type Clock } from '../../src/domain/clock.js';
import { probeWritable } from '../../src/obs/health.js';
import { UsageTracker } from '../../src/store/last-used.js';
import type { ChangeFeed, ChangeTopic, StorageBackend } from '../../src/store/ports.js';
import { BudgetStore } from '../../src/store/sqlite/budgets.js';
import { CACHE_MIGRATIONS, CacheStore } from '../../src/store/sqlite/cache.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { KeyStore } from '../../src/store/sqlite/keys.js';
import { LedgerStore } from '../../src/store/sqlite/ledger.js';
import { LimitStore } from '../../src/store/sqlite/limits.js';
import { ReadWorker } from '../../src/store/sqlite/read-worker.js';
import { MAIN_MIGRATIONS } from '../../src/store/sqlite/schema.js';
import { WriteGate } from '../../src/store/write-gate.js';

/*
 * The backends every contract suite (test/contract/*.contract.ts) runs against. A new backend
 * (PostgreSQL + Redis, issue #12's multi-replica follow-up) is one more entry in BACKENDS.
 */

export type SuiteName = 'keys' | 'rates' | 'credits' | 'ledger' | 'cache' | 'changes' | 'backend';
export const ALL_SUITES: readonly SuiteName[] = ['keys', 'rates', 'credits', 'ledger', 'cache', 'changes', 'backend'];

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

export const BACKENDS: readonly BackendFactory[] = [sqlite, sqliteAnsweringLater];

/** Per port, the methods whose answer is a MaybePromise (the others answer at once by contract). */
const MAYBE_LATER: Record<string, readonly string[]> = {
  keys: ['findBySecret', 'get', 'list', 'create', 'update', 'rotate', 'revoke'],
  lastUsed: ['flush'],
  rates: ['counts', 'add', 'take', 'flush'],
  credits: ['used', 'reserved', 'states', 'tryReserve'],
  ledger: ['record', 'flush', 'recoverAbandoned'],
  cache: ['get', 'put', 'purge', 'maintain', 'flush'],
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
  const built = openSqliteByHand(storage.dir, clock);
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

/*
 * ==== REPLACE WITH openBackend(config, { role: 'server', clock, logger }) (src/store/open.ts) ====
 * Until that lands, the embedded SQLite backend put together by hand the way app.ts does it:
 * tollgate.db and cache.db with the server's write gates and report worker.
 * Differences from the server: WAL auto-checkpoint on (no Checkpointer thread), no retention pass.
 */
function openSqliteByHand(dir: string, clock: Clock): { backend: StorageBackend; crash(): Promise<void> } {
  const db = openDatabase(join(dir, 'tollgate.db'), MAIN_MIGRATIONS, { busyTimeoutMs: 250 });
  const cacheDb = openDatabase(join(dir, 'cache.db'), CACHE_MIGRATIONS, { busyTimeoutMs: 100 });
  const gate = new WriteGate('tollgate.db', { clock });
  const cacheGate = new WriteGate('cache.db', { clock });
  const reader = new ReadWorker();
  const keys = new KeyStore(db, clock);
  const lastUsed = new UsageTracker(keys, 5_000, { gate });
  const rates = new LimitStore(db, clock, 1_000, { gate });
  const credits = new BudgetStore(db, gate);
  const ledger = new LedgerStore(db, credits, { gate, reader });
  const cache = new CacheStore(cacheDb, { gate: cacheGate, reader });
  const changes = dataVersionFeed({ keys: db, cache: cacheDb });
  const drop = async () => {
    changes.close();
    await reader.close();
    db.close();
    cacheDb.close();
  };
  let closing: Promise<void> | null = null;
  const backend: StorageBackend = {
    kind: 'sqlite',
    keys,
    lastUsed,
    rates,
    credits,
    ledger,
    cache,
    changes,
    health() {
      const checks: Record<string, string> = { database: probeWritable(db), cache_database: probeWritable(cacheDb) };
      for (const g of [gate, cacheGate]) checks[g.database] = g.state().ok ? 'ok' : `failing: ${g.state().code}`;
      return { ok: Object.values(checks).every((c) => c === 'ok' || c === 'busy'), checks };
    },
    gauges: () => ({
      databases: [gate, cacheGate].map((g) => ({ database: g.database, writable: g.state().ok, failures: g.state().failuresTotal })),
      ledger: ledger.backlog(),
    }),
    async flush() {
      for (const f of [() => lastUsed.flush(), () => cache.flush(), () => rates.flush(), () => ledger.flush()]) {
        try {
          f();
        } catch {
          /* the real backend logs it; the next flush retries */
        }
      }
    },
    close() {
      closing ??= (async () => {
        await backend.flush();
        rates.close();
        await drop();
      })();
      return closing;
    },
  };
  return { backend, crash: async () => void (db.open ? await drop() : undefined) };
}

/** ChangeFeed by polling PRAGMA data_version, which moves when another connection commits to the file. */
function dataVersionFeed(dbs: Record<ChangeTopic, DB>, everyMs = 200): ChangeFeed & { close(): void } {
  const topics = (Object.keys(dbs) as ChangeTopic[]).map((topic) => {
    const version = dbs[topic].prepare<[], number>('PRAGMA data_version').pluck();
    return { topic, version, seen: version.get()!, listeners: new Set<() => void>() };
  });
  const timer = setInterval(() => {
    for (const t of topics) {
      const v = t.version.get()!;
      if (v === t.seen) continue;
      t.seen = v;
      for (const l of t.listeners) l();
    }
  }, everyMs);
  timer.unref();
  return {
    subscribe(topic, listener) {
      const set = topics.find((t) => t.topic === topic)!.listeners;
      const own = () => listener();
      set.add(own);
      return () => void set.delete(own);
    },
    close: () => clearInterval(timer),
  };
}
