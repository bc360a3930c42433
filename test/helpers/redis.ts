import { randomBytes } from 'node:crypto';
import { createClient, type RedisClientType } from 'redis';

/**
 * Keys of their own per test on the machine's Redis (TOLLGATE_TEST_REDIS_URL; default the local
 * server's database 15, the tests' own), under a random prefix that `drop` deletes afterwards.
 */
export const REDIS_URL = process.env.TOLLGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/15';

export async function redisClient(): Promise<RedisClientType> {
  const client = createClient({ url: REDIS_URL }) as RedisClientType;
  client.on('error', () => {}); // a test that cuts the connection sees it in its own calls
  await client.connect();
  return client;
}

export function freshPrefix(): { prefix: string; drop(): Promise<void> } {
  const prefix = `tg-test:${process.pid}:${randomBytes(4).toString('hex')}:`;
  return {
    prefix,
    async drop() {
      const client = await redisClient();
      try {
        for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 })) if (keys.length > 0) await client.del(keys);
      } finally {
        client.destroy();
      }
    },
  };
}
