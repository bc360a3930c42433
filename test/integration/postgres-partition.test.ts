import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { CHANGES_CHANNEL, PgChangeFeed, stampPayload } from '../../src/store/postgres/change-feed.js';
import { inTransaction, openPool } from '../../src/store/postgres/pool.js';
import type { FailoverPool } from '../../src/store/postgres/failover-pool.js';
import { isStorageError } from '../../src/store/storage-errors.js';
import { netPartition, type Partition } from '../helpers/net-partition.js';
import { freshDatabase } from '../helpers/postgres.js';

/**
 * The shared backend's connections when the network to PostgreSQL goes silent (a partition,
 * a frozen host, a failover): the server's statement timeout cannot end a wait for an answer
 * that never crosses the network, so a query on a pooled connection waited forever, and every
 * request needing the database with it; and the change feed's listening connection, which
 * sends nothing, never learnt it was gone. The client's own timeouts end both.
 */
const STATEMENT_MS = 700;
/** The client's timeout (statement timeout + 1 s) once, with slack for a loaded machine; twice would pass it. */
const BOUND_MS = STATEMENT_MS + 1_000 + 1_200;
let net: Partition;
let db: { url: string; drop(): Promise<void> };

beforeAll(async () => {
  db = await freshDatabase();
  net = await netPartition('127.0.0.1', 5432);
});
afterAll(async () => {
  await net?.close();
  await db?.drop();
});

async function timed(p: Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const t0 = performance.now();
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  return { err, ms: performance.now() - t0 };
}

describe('a pool cut off from PostgreSQL', () => {
  it('a query and a transaction on a silent connection fail as storage failures within the client timeout; the pool works again after', async () => {
    const pool = openPool(net.through(db.url), { max: 2, statementTimeoutMs: STATEMENT_MS });
    try {
      // Two pooled connections, idle, that the partition will silence.
      await Promise.all([pool.query('SELECT pg_sleep(0.05)'), pool.query('SELECT pg_sleep(0.05)')]);
      net.cut('blackhole');

      const query = await timed(pool.query('SELECT 1'));
      expect(isStorageError(query.err), String(query.err)).toBe(true);
      expect(query.ms).toBeLessThan(BOUND_MS);

      // Not twice the timeout: the broken connection is closed, not sent a ROLLBACK.
      const tx = await timed(inTransaction(pool, (c) => c.query('SELECT 1')));
      expect(isStorageError(tx.err), String(tx.err)).toBe(true);
      expect(tx.ms).toBeLessThan(BOUND_MS);

      net.restore();
      // Neither connection went back to the pool to fail its next user.
      expect((await pool.query<{ n: number }>('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
      expect(await inTransaction(pool, async (c) => (await c.query<{ n: number }>('SELECT 2 AS n')).rows[0]!.n)).toBe(2);
    } finally {
      await pool.end();
    }
  }, 15_000);
});

describe('a pool after a failover', () => {
  it('one request meets a connection to the old server; the pool retires the others it held, and the next requests get new ones', async () => {
    const pool = openPool(net.through(db.url), { max: 4, statementTimeoutMs: STATEMENT_MS });
    try {
      // Four pooled connections, idle, which the failover will leave leading nowhere.
      await Promise.all([0, 1, 2, 3].map(() => pool.query('SELECT pg_sleep(0.05)')));
      expect(pool.idleCount).toBe(4);
      net.cut('blackhole');
      // The old server forgot them and nothing tells the client; new connections reach the new one.
      net.restore('silent');

      const first = await timed(pool.query('SELECT 1'));
      expect(isStorageError(first.err), String(first.err)).toBe(true);
      expect(first.ms).toBeLessThan(BOUND_MS);
      // Before: each of the three other old connections cost its request the timeout and an error, in turn.
      for (let i = 0; i < 3; i++) {
        const next = await timed(pool.query<{ n: number }>('SELECT $1::int AS n', [i]));
        expect(next.err).toBeNull();
        expect(next.ms).toBeLessThan(STATEMENT_MS);
      }
      expect(await inTransaction(pool, async (c) => (await c.query<{ n: number }>('SELECT 2 AS n')).rows[0]!.n)).toBe(2);
      expect((pool as FailoverPool).retired).toBe(3);
    } finally {
      net.restore();
      await pool.end();
    }
  }, 15_000);
});

describe('the change feed cut off from PostgreSQL', () => {
  it('notices a connection gone silent, reconnects once the network is back, and announces everything as changed', async () => {
    const feed = await PgChangeFeed.open(net.through(db.url), { checkEveryMs: 200, checkTimeoutMs: 300 });
    const heard: string[] = [];
    feed.onChange((c) => heard.push(`${c.topic}:${c.key ?? '*'}`));
    const notify = async (payload: string) => {
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      await c.query('SELECT pg_notify($1, $2)', [CHANGES_CHANNEL, payload]);
      await c.end();
    };
    const until = async (what: string, ms: number, ok: () => boolean) => {
      const end = Date.now() + ms;
      while (!ok()) {
        if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    try {
      await notify('cache:before');
      await until('the first notification', 2_000, () => heard.includes('cache:before'));

      net.cut('blackhole');
      await until('the silence noticed', 2_000, () => !feed.listening);
      // The server forgot the old connection (a failover): nothing will ever arrive on it.
      net.restore('silent');
      await until('listening again', 5_000, () => feed.listening);
      // What was missed meanwhile is unknown: everything is announced as changed.
      expect(heard).toEqual(expect.arrayContaining(['keys:*', 'cache:*']));
      await notify('keys');
      await notify('cache:after');
      await until('a notification after the partition', 2_000, () => heard.includes('cache:after'));
    } finally {
      await feed.close();
    }
  }, 15_000);

  it('reconnects within about a second of the network healing, even with a reconnect attempt left hanging by the partition', async () => {
    const feed = await PgChangeFeed.open(net.through(db.url), { checkEveryMs: 200, checkTimeoutMs: 300 });
    try {
      net.cut('blackhole');
      const lost = Date.now();
      while (feed.listening) {
        if (Date.now() - lost > 2_000) throw new Error('the silence was not noticed');
        await new Promise((r) => setTimeout(r, 20));
      }
      // The first reconnect attempt (0.5 s after the loss) is now waiting on the partition,
      // and the server will never answer it: only its connect timeout (5 s) would end it.
      await new Promise((r) => setTimeout(r, 1_200));
      net.restore('silent');
      const healed = Date.now();
      while (!feed.listening) {
        // Was ~4.5 s: the next attempt waited for the hanging one to time out.
        if (Date.now() - healed > 2_500) throw new Error('not listening within 2.5 s of the network healing');
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(feed.listening).toBe(true);
    } finally {
      await feed.close();
    }
  }, 15_000);

  it('told of a change through Redis while cut off, forgets nothing when it heard the change\'s stamp, and everything of the topic when it did not', async () => {
    const feed = await PgChangeFeed.open(net.through(db.url), { checkEveryMs: 60_000 });
    const heard: string[] = [];
    feed.onChange((c) => heard.push(`${c.topic}:${c.key ?? '*'}`));
    try {
      // A write's change and its stamp, in one transaction (as postgres/keys.ts sends them).
      const writer = openPool(db.url, { max: 1 });
      await inTransaction(writer, async (c) => {
        await c.query('SELECT pg_notify($1, $2)', [CHANGES_CHANNEL, 'keys']);
        await c.query('SELECT pg_notify($1, $2)', [CHANGES_CHANNEL, stampPayload('writer.1')]);
      });
      await writer.end();
      for (let i = 0; i < 100 && !heard.includes('keys:*'); i++) await new Promise((r) => setTimeout(r, 20));
      expect(heard).toEqual(['keys:*']);
      heard.length = 0;

      net.cut('blackhole');
      // Its listening connection cannot answer now; the stamp says the change was heard.
      feed.heardElsewhere('keys', ['writer.1']);
      await new Promise((r) => setTimeout(r, 1_300));
      expect(heard).toEqual([]);
      // A change it did not hear (and one that names no write) makes it forget the topic.
      feed.heardElsewhere('keys', ['writer.1', 'writer.2']);
      feed.heardElsewhere('cache', null);
      await new Promise((r) => setTimeout(r, 1_300));
      expect(heard.sort()).toEqual(['cache:*', 'keys:*']);
    } finally {
      net.restore('resume');
      await feed.close();
    }
  }, 15_000);
});
