import { createClient, type RedisClientType } from 'redis';
import type { StorageLog } from '../backend.js';
import { withTimeout } from '../time-bound.js';
import { SilenceWatch, type SilenceWatchOptions } from './silence-watch.js';

export type { RedisClientType } from 'redis';

const CONNECT_TIMEOUT_MS = 5_000;

/**
 * A connection to the shared Redis. Commands fail at once while it is disconnected (no offline
 * queue: a request must not wait for a Redis that may not come back); each user bounds its
 * commands' time itself (deadline.ts, call-claims.ts), more cheaply than node-redis's per-command
 * timeout. The client reconnects on its own, backing off to one try a second, and a connection
 * gone silent is replaced (SilenceWatch). Startup waits for the first connection, at most
 * CONNECT_TIMEOUT_MS. Close it with closeRedis.
 */
export async function openRedis(url: string, log?: StorageLog, watch: SilenceWatchOptions = {}): Promise<RedisClientType> {
  let down = false;
  const client = createClient({
    url,
    disableOfflineQueue: true,
    socket: { connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1_000) },
  }) as RedisClientType;
  client.on('error', (err: Error) => {
    if (!down) log?.warn({ err: { name: err.name, message: err.message } }, 'redis connection lost; reconnecting');
    down = true;
  });
  client.on('ready', () => {
    if (down) log?.info({}, 'redis connection back');
    down = false;
  });
  try {
    await withTimeout(client.connect(), CONNECT_TIMEOUT_MS, `redis did not answer within ${CONNECT_TIMEOUT_MS / 1000} s`);
  } catch (err) {
    client.destroy();
    throw err;
  }
  const onSilent = () => log?.warn({}, 'redis stopped answering on an open connection; connecting again');
  watches.set(client, new SilenceWatch(client, { onSilent, ...watch }));
  return client;
}

const watches = new WeakMap<RedisClientType, SilenceWatch>();

/** Close a client openRedis made, for good: its silence watch stops first, so it is never opened again. */
export function closeRedis(client: RedisClientType): void {
  watches.get(client)?.stop();
  client.destroy();
}

/** The watch of a client openRedis made (tests). */
export function silenceWatchOf(client: RedisClientType): SilenceWatch | undefined {
  return watches.get(client);
}

/**
 * Redis keys are prefixed with the database's name: installations (or test runs) that share
 * one Redis but not one database never count each other's requests.
 */
export function redisPrefixOf(databaseUrl: string): string {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1)) || 'postgres';
  return `tg:${name}:`;
}
