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

describe('shared backend: readers of long reports that stop reading', () => {
  it('hold the report connections, never the ones a charge is written on; readers past them fail as storage unavailable', async () => {
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
    await holding;

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
});
