import type { StorageHealth } from '../backend.js';
import type { WriteGateState } from '../write-gate.js';
import type { DB } from './db.js';

/** Written by every readiness probe: "TLGT", which also marks the files as Tollgate's. */
const APPLICATION_ID = 0x544c4754;
/** A probe waits at most this long for a writer (e.g. the CLI) to release the database. */
const PROBE_BUSY_MS = 100;

export type DbCheck = 'ok' | 'busy' | 'closed' | `error: ${string}`;

/**
 * Is this database open and writable right now? One tiny committed write (the header's
 * application_id), O(1) whatever the size of the file: it fails on a read-only file,
 * a read-only mount or a full disk, which a read or a rolled-back BEGIN would not notice.
 * A lock held by another writer is "busy", not a failure: the file is fine, just shared.
 */
export function probeWritable(db: DB): DbCheck {
  if (!db.open) return 'closed';
  try {
    touchHeader(db);
    return 'ok';
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'UNKNOWN';
    return code === 'SQLITE_BUSY' ? 'busy' : `error: ${code}`;
  }
}

/** The probe's write itself; throws the database's error. */
export function touchHeader(db: DB): void {
  if (db.inTransaction) return; // cannot happen between requests; never commit someone else's work
  const busyTimeout = db.pragma('busy_timeout', { simple: true }) as number;
  try {
    db.pragma(`busy_timeout = ${PROBE_BUSY_MS}`);
    db.pragma(`application_id = ${APPLICATION_ID}`);
  } finally {
    if (db.open) db.pragma(`busy_timeout = ${busyTimeout}`);
  }
}

/** A lock another process holds is waited out and shared; anything else is a real failure. */
const LOCK_CODES = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED']);

/**
 * The databases can be written: each probed with a write (probeWritable), and `writes`, what
 * the request path saw of its own writes (see WriteGate): `charges` is tollgate.db, where a
 * failure refuses provider calls (503 STORAGE_UNAVAILABLE). A failure other than a lock held
 * elsewhere (a full disk, a read-only file, a closed database) makes storage not ok.
 */
export function databaseHealth(input: { databases: Record<string, DB>; writes?: Record<string, WriteGateState> }): StorageHealth {
  const checks: Record<string, string> = {};
  let ok = true;
  for (const [name, db] of Object.entries(input.databases)) {
    const c = probeWritable(db);
    checks[name] = c;
    if (c !== 'ok' && c !== 'busy') ok = false;
  }
  for (const [name, w] of Object.entries(input.writes ?? {})) {
    checks[name] = w.ok ? 'ok' : `failing: ${w.code} since ${new Date(w.since ?? 0).toISOString()}`;
    if (!w.ok && !LOCK_CODES.has(w.code ?? '')) ok = false;
  }
  return { ok, checks };
}
