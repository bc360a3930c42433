import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateConfig } from '../../src/config.js';
import { FakeClock, type Clock } from '../../src/domain/clock.js';
import { DataDirInUse } from '../../src/domain/startup-error.js';
import { migrateSharedSchema, openBackend, openStorage, type SqliteBackend } from '../../src/store/open.js';
import type { SharedBackend } from '../../src/store/shared/backend.js';
import type { StorageBackend } from '../../src/store/backend.js';
import pg from 'pg';
import { freshDatabase } from '../helpers/postgres.js';
import { freshPrefix, REDIS_URL } from '../helpers/redis.js';

/*
 * The backends every contract suite (test/contract/*.contract.ts) runs against. A new backend
 * (PostgreSQL + Redis, issue #12's multi-replica follow-up) is one more entry in BACKENDS.
 */

export type SuiteName = 'keys' | 'audit' | 'sessions' | 'alerts' | 'teams' | 'rates' | 'credits' | 'ledger' | 'cache' | 'changes' | 'claims' | 'backend' | 'replicas';
/**
 * Every suite but `replicas`: several live processes serving from one storage, each charging
 * only the dead ones' reservations, which only a shared backend supports (the embedded one
 * serves from one process, and charges every reservation but its own).
 */
export const COMMON_SUITES: readonly SuiteName[] = ['keys', 'audit', 'sessions', 'alerts', 'teams', 'rates', 'credits', 'ledger', 'cache', 'changes', 'claims', 'backend'];

export interface OpenOptions {
  /** The clock of every handle on the storage (a new FakeClock at 2026-01-01 when absent). */
  readonly clock?: FakeClock;
  /** The configuration's `ledger` section (retention and how often a server prunes); its defaults when absent. */
  readonly ledger?: { readonly retentionDays?: number | null; readonly pruneIntervalMs?: number };
}

/** One process's view of a storage: its ports, and the ways a test ends or multiplies it. */
export interface Handle {
  readonly backend: StorageBackend;
  readonly clock: FakeClock;
  /**
   * Another process on the same storage (its own connections and memory). Usable after this
   * one closed or crashed. The embedded backend's is a command while a server runs on it.
   */
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

/** The upstream every backend is configured with: none is ever called. */
const UPSTREAM = { url: 'http://127.0.0.1:1', apiKey: 'contract-test-key-0000' };

/** A shared set of open handles per storage, so that cleanup closes the peers too. */
interface Storage {
  readonly dir: string;
  readonly open: Set<{ crash(): Promise<void> }>;
}

const sqlite: BackendFactory = {
  name: 'sqlite',
  suites: COMMON_SUITES,
  async open(opts = {}) {
    const storage: Storage = { dir: mkdtempSync(join(tmpdir(), 'tollgate-contract-')), open: new Set() };
    return sqliteHandle(storage, opts.clock ?? new FakeClock(), opts.ledger);
  },
};

/**
 * The same backend answering every call a port may answer later with a promise, run a turn
 * later, as a network backend does: the suites must hold whichever way a backend answers.
 */
const sqliteAnsweringLater: BackendFactory = {
  name: 'sqlite, answering with promises',
  suites: COMMON_SUITES,
  open: async (opts) => later(await sqlite.open(opts)),
};

/** The lease interval passing at once for a replica that stopped heartbeating (as it would leaseMs later). */
async function expireLease(url: string, replica: { id: string; leaseMs: number }): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`UPDATE replicas SET heartbeat_at = now() - $2 * interval '1 millisecond' WHERE id = $1`, [replica.id, replica.leaseMs + 1_000]);
  } finally {
    await c.end();
  }
}

/**
 * One database per test process with the schema migrated as `tollgate migrate` leaves it, which
 * each shared storage is a copy of: migrating took about 0.3 s of every one of the ~100 shared
 * tests, and the contract is about the ports on a migrated database (opening a copy still
 * checks its schema version; the migrations themselves have their own tests).
 */
let migrated: Promise<{ name: string; drop(): Promise<void> }> | undefined;
function migratedTemplate(): Promise<{ name: string; drop(): Promise<void> }> {
  migrated ??= freshDatabase().then(async (db) => {
    await migrateSharedSchema(validateConfig({ storage: { databaseUrl: db.url, redisUrl: REDIS_URL }, upstream: UPSTREAM }));
    return db;
  });
  return migrated;
}

/**
 * The shared storages' databases being dropped (which waits for a checkpoint, ~0.1-0.5 s), each
 * resolving to its failure if it failed: reported by dropMigratedTemplate, not as unhandled.
 */
const dropping: Array<Promise<unknown>> = [];

/** Drop this process's migrated template, once no storage is being copied from it, and wait for the copies' drops. */
export async function dropMigratedTemplate(): Promise<void> {
  const failed = (await Promise.all(dropping.splice(0))).find((err) => err !== null);
  const db = await migrated;
  migrated = undefined;
  await db?.drop();
  if (failed !== undefined) throw failed;
}

/**
 * The shared backend whole, as `serve` opens it with storage.databaseUrl and storage.redisUrl
 * set (store/open.ts): every port, with each replica's memory of keys and hot cache entries.
 * A peer is another replica on the same database and Redis.
 */
const shared: BackendFactory = {
  name: 'shared (postgres + redis)',
  suites: [...COMMON_SUITES, 'replicas'],
  async open(opts = {}) {
    const db = await freshDatabase({ template: (await migratedTemplate()).name });
    const keys = freshPrefix();
    const clock = opts.clock ?? new FakeClock();
    const config = validateConfig({
      storage: { databaseUrl: db.url, redisUrl: REDIS_URL },
      upstream: UPSTREAM,
      ...(opts.ledger ? { ledger: opts.ledger } : {}),
    });
    const open = new Set<SharedBackend>();
    const handle = async (): Promise<Handle> => {
      const backend = (await openStorage(config, { role: 'server', clock, redisPrefix: keys.prefix })) as SharedBackend;
      open.add(backend);
      return {
        backend,
        clock,
        peer: handle,
        crash: async () => {
          open.delete(backend);
          await backend.abandon();
          await expireLease(db.url, backend.replica!);
        },
        cleanup: async () => {
          for (const b of [...open]) await b.abandon();
          open.clear();
          await keys.drop();
          // Nothing is connected to it any more: dropped while the next test runs.
          dropping.push(db.drop().then(() => null, (err: unknown) => err));
        },
      };
    };
    return handle();
  },
};

export const BACKENDS: readonly BackendFactory[] = [sqlite, sqliteAnsweringLater, shared];

/** Per port, the methods whose answer is a MaybePromise (the others answer at once by contract). */
const MAYBE_LATER: Record<string, readonly string[]> = {
  keys: ['findBySecret', 'get', 'list', 'create', 'update', 'rotate', 'revoke'],
  teams: ['list', 'get', 'set', 'delete'],
  audit: ['append', 'list'],
  sessions: ['create', 'get', 'revoke'],
  alerts: ['record', 'claim', 'settle', 'list'],
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

function sqliteHandle(storage: Storage, clock: FakeClock, ledger: OpenOptions['ledger']): Handle {
  const built = openSqlite(storage.dir, clock, ledger);
  const self = { crash: built.crash };
  storage.open.add(self);
  return {
    backend: built.backend,
    clock,
    peer: async () => sqliteHandle(storage, clock, ledger),
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

/**
 * The embedded backend as `serve` opens it (store/open.ts), on the storage's data directory;
 * while a server still holds the directory, as a command opens it: one server per data
 * directory (serve-lock.ts), so the other process beside a running server is the CLI.
 */
function openSqlite(dir: string, clock: Clock, ledger: OpenOptions['ledger']): { backend: StorageBackend; crash(): Promise<void> } {
  const config = validateConfig({ dataDir: dir, upstream: UPSTREAM, ...(ledger ? { ledger } : {}) });
  let backend: SqliteBackend;
  try {
    backend = openBackend(config, { role: 'server', clock });
  } catch (err) {
    if (!(err instanceof DataDirInUse)) throw err;
    backend = openBackend(config, { role: 'cli', clock });
  }
  return { backend, crash: () => backend.abandon() };
}
