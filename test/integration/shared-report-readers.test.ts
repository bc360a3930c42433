import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import { FakeClock } from '../../src/domain/clock.js';
import { migrateSharedSchema, openStorage } from '../../src/store/open.js';
import type { SharedBackend } from '../../src/store/shared/backend.js';
import { isStorageError } from '../../src/store/storage-errors.js';
import { DAY, row, T0 } from '../contract/support.js';
import { freshDatabase } from '../helpers/postgres.js';
import { freshPrefix, REDIS_URL } from '../helpers/redis.js';

/*
 * A long usage report on the shared backend is written as its client reads it, from a cursor on
 * a connection held meanwhile (PgLedger.rollUpPages). Clients that stop reading (a slow link, a
 * stuck download) must hold only the connections kept for reports: on the pool that writes
 * charges, ten of them had left a paid miss's ledger row waiting for a connection, then failing.
 */
let cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A replica's storage on a database of its own, with 2 credits spent on each of three days. */
async function replicaWithUsage(): Promise<{ backend: SharedBackend; key: string; databaseName: string }> {
  const db = await freshDatabase();
  cleanup.push(() => db.drop());
  const keys = freshPrefix();
  cleanup.push(() => keys.drop());
  const config = validateConfig({ storage: { databaseUrl: db.url, redisUrl: REDIS_URL }, upstream: { url: 'http://127.0.0.1:1', apiKey: 'report-readers-key-000' } });
  await migrateSharedSchema(config);
  const backend = (await openStorage(config, { role: 'server', clock: new FakeClock(T0), redisPrefix: keys.prefix })) as SharedBackend;
  cleanup.push(() => backend.close());
  const key = (await backend.keys.create({ name: 'slow-readers' })).key.id;
  for (let d = 0; d < 3; d++) await backend.ledger.record(row(key, T0 + d * DAY, { credits: 2, cache: 'MISS' }));
  return { backend, key, databaseName: db.name };
}

describe('shared backend: readers of long reports', () => {
  it('that stop reading hold the report connections, never the ones a charge is written on; readers past them fail as storage unavailable', async () => {
    const { backend, key } = await replicaWithUsage();

    // Ten readers, each given its first page (or waiting for a connection to read it), then reading no more.
    const readers = Array.from({ length: 10 }, () => backend.ledger.rollUpPages(T0, T0 + 3 * DAY, ['day'], 1)[Symbol.asyncIterator]());
    let given = 0;
    let twoGiven!: () => void;
    const holding = new Promise<void>((resolve) => (twoGiven = resolve));
    const firsts = readers.map((r) =>
      r.next().then(
        (page) => {
          if (!page.done && ++given === 2) twoGiven();
          return page;
        },
        (err: unknown) => err,
      ),
    );
    cleanup.push(() => Promise.allSettled(readers.map((r) => r.return?.(undefined))));
    // Should fewer than two ever be given a page, this ends when all have settled, and the count below says so.
    await Promise.race([holding, Promise.all(firsts)]);
    expect(given).toBe(2);

    // A paid miss's row, while two readers hold their connections and eight wait for one: written, with its charge.
    await backend.ledger.record(row(key, T0 + 5, { credits: 7, cache: 'MISS' }));
    expect(backend.ledger.backlog()).toMatchObject({ retrying: 0 });
    // The eight waited for a report connection, then failed as storage unavailable (a 503 to their clients).
    const outcomes = await Promise.all(firsts);
    const failed = outcomes.filter((o) => o instanceof Error);
    expect(failed).toHaveLength(8);
    for (const err of failed) expect(isStorageError(err)).toBe(true);
    for (const page of outcomes.filter((o) => !(o instanceof Error))) expect(page).toMatchObject({ done: false, value: [{ day: '2026-01-01', credits: 2 }] });
    // The readers let go, a report reads again.
    await Promise.all(readers.map((r) => r.return?.(undefined)));
    expect((await backend.ledger.rollUp(T0, T0 + 3 * DAY, [])).map((r) => r.credits)).toEqual([13]);
  }, 30_000);

  it('whose connection PostgreSQL ends between two pages fail as storage unavailable; the next report reads from a new one', async () => {
    const { backend, databaseName } = await replicaWithUsage();
    const reader = backend.ledger.rollUpPages(T0, T0 + 3 * DAY, ['day'], 1)[Symbol.asyncIterator]();
    cleanup.push(async () => reader.return?.(undefined));
    expect(await reader.next()).toMatchObject({ done: false, value: [{ day: '2026-01-01', credits: 2 }] });
    // Every connection to this database ended by the server, the cursor's among them (a restart, a failover).
    const admin = new pg.Client({ connectionString: process.env.TOLLGATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' });
    await admin.connect();
    try {
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [databaseName]);
    } finally {
      await admin.end();
    }
    const failed = await reader.next().then(
      () => null,
      (err: unknown) => err,
    );
    expect(isStorageError(failed)).toBe(true);
    // Connections that died are dropped, not handed out again: a report after it reads whole.
    const pages: unknown[] = [];
    for await (const page of backend.ledger.rollUpPages(T0, T0 + 3 * DAY, ['day'], 2)) pages.push(page);
    expect(pages.flat()).toMatchObject([{ credits: 2 }, { credits: 2 }, { credits: 2 }]);
  }, 30_000);
});
