import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readiness } from '../../src/obs/health.js';
import { databaseHealth, probeWritable } from '../../src/store/sqlite/health.js';
import { openDatabase } from '../../src/store/sqlite/db.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-health-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, 'probe.db');
const db = openDatabase(file, [(d) => d.exec('CREATE TABLE t (x INTEGER) STRICT')]);

describe('probeWritable', () => {
  it('ok on a writable database, and it restores the busy timeout', () => {
    expect(probeWritable(db)).toBe('ok');
    expect(db.pragma('busy_timeout', { simple: true })).toBe(5000);
  });

  it('an error on a database it cannot write', () => {
    const ro = new Database(file, { readonly: true });
    expect(probeWritable(ro)).toBe('error: SQLITE_READONLY');
    ro.close();
  });

  it('"busy" (still ready) while another connection holds the write lock, without waiting long', () => {
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    const t0 = Date.now();
    expect(probeWritable(db)).toBe('busy');
    expect(Date.now() - t0).toBeLessThan(1000);
    other.exec('ROLLBACK');
    other.close();
    expect(probeWritable(db)).toBe('ok');
  });

  it('"closed" on a closed handle', () => {
    const d = new Database(join(dir, 'closed.db'));
    d.close();
    expect(probeWritable(d)).toBe('closed');
  });

  it('leaves the data alone', () => {
    db.prepare('INSERT INTO t VALUES (1)').run();
    probeWritable(db);
    expect(db.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 1 });
  });
});

describe('readiness', () => {
  it('ready with writable databases, whatever the breaker says', () => {
    for (const breaker of ['closed', 'half_open', 'open'] as const) {
      const r = readiness({ storage: databaseHealth({ databases: { database: db } }), breaker, draining: false });
      expect(r).toEqual({ ok: true, checks: { database: 'ok', upstream_breaker: breaker, lifecycle: 'serving' } });
    }
  });

  it('not ready while draining or with a database it cannot write', () => {
    expect(readiness({ storage: databaseHealth({ databases: { database: db } }), breaker: 'closed', draining: true }).ok).toBe(false);
    const ro = new Database(file, { readonly: true });
    const r = readiness({ storage: databaseHealth({ databases: { database: db, cache_database: ro } }), breaker: 'closed', draining: false });
    expect(r.ok).toBe(false);
    expect(r.checks.cache_database).toBe('error: SQLITE_READONLY');
    ro.close();
  });
});
