/**
 * A key change and its audit entry commit together or not at all, on both backends: with the
 * log refusing every insert (a trigger), each audited write fails and leaves the key as it was.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import type { StorageBackend } from '../../src/store/backend.js';
import { openStorage } from '../../src/store/open.js';
import { freshDatabase } from '../helpers/postgres.js';
import { freshPrefix, REDIS_URL } from '../helpers/redis.js';

const UPSTREAM = { url: 'http://127.0.0.1:1', apiKey: 'audit-atomic-test-key-00' };

/** Every audited write fails; the key and the log are as before each. */
async function refusedWrites(b: StorageBackend, refuseAudit: () => Promise<void>): Promise<void> {
  const { key } = await b.keys.create({ name: 'before', rate: '1/second' }, 'admin-api');
  await refuseAudit();
  const keysBefore = await b.keys.list();
  await expect(Promise.resolve().then(() => b.keys.create({ name: 'new' }, 'admin-api'))).rejects.toThrow(/audit refused/);
  await expect(Promise.resolve().then(() => b.keys.update(key.id, { name: 'after', rate: null }, 'admin-api'))).rejects.toThrow(/audit refused/);
  await expect(Promise.resolve().then(() => b.keys.rotate(key.id, 0, 'admin-api'))).rejects.toThrow(/audit refused/);
  await expect(Promise.resolve().then(() => b.keys.revoke(key.id, 'admin-api'))).rejects.toThrow(/audit refused/);
  expect(await b.keys.list()).toEqual(keysBefore);
  expect((await b.audit.list({ limit: 10 })).entries.map((e) => e.action)).toEqual(['key.create']);
}

describe('a key change never lands without its audit entry', () => {
  it('embedded: the entry is in the change\'s transaction in tollgate.db', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-audit-'));
    const b = await openStorage(validateConfig({ dataDir: dir, upstream: UPSTREAM }), { role: 'cli' });
    try {
      await refusedWrites(b, async () => {
        const db = new Database(join(dir, 'tollgate.db'));
        db.exec("CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'audit refused'); END");
        db.close();
      });
    } finally {
      await b.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('shared: the entry is in the change\'s transaction in PostgreSQL', async () => {
    const db = await freshDatabase();
    const prefix = freshPrefix();
    const b = await openStorage(validateConfig({ storage: { databaseUrl: db.url, redisUrl: REDIS_URL }, upstream: UPSTREAM }), { role: 'cli', redisPrefix: prefix.prefix });
    try {
      await refusedWrites(b, async () => {
        const c = new pg.Client({ connectionString: db.url });
        await c.connect();
        await c.query(`CREATE FUNCTION refuse_audit() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$ LANGUAGE plpgsql;
          CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_audit()`);
        await c.end();
      });
    } finally {
      await b.close();
      await prefix.drop();
      await db.drop();
    }
  });
});
