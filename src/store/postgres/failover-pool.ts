import pg from 'pg';
import { isNetworkStoreFailure } from '../storage-errors.js';

/**
 * A failure that says the connection itself is gone or unanswering (the network, the server
 * going away, the client's own timeout), not one statement's trouble on a healthy connection:
 * a statement timeout (57014), a serialization conflict (40), a resource limit (53).
 */
export function connectionLost(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^(57014|40|53)/.test(code)) return false;
  return isNetworkStoreFailure(err);
}

type ConnectCallback = (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void;

/**
 * pg's Pool, except that a connection lost on the network retires every connection the pool
 * held at that moment. After a failover (a new primary behind the same address) the old
 * connections lead nowhere and nothing tells the client: each one, taken from the pool, cost
 * its request the client's query timeout and a 503, one request after another. Connections
 * made before the loss are now closed when next taken from the pool, and a new one is made
 * instead (where the network is still cut, that one fails within the connection timeout).
 *
 * Only public Pool API is used: `connect` with a callback (what `Pool.query` calls) or as a
 * promise, the `connect` and `release` events, and `release(err)`, which closes a connection.
 */
export class FailoverPool extends pg.Pool {
  private epoch = 0;
  private readonly born = new WeakMap<pg.PoolClient, number>();
  /** Connections closed because they were older than a loss (tests, metrics). */
  retired = 0;

  constructor(config: pg.PoolConfig) {
    super(config);
    this.on('connect', (client) => this.born.set(client as pg.PoolClient, this.epoch));
    this.on('release', (err: unknown, client) => {
      if (err && connectionLost(err) && (this.born.get(client) ?? -1) === this.epoch) this.epoch++;
    });
  }

  override connect(): Promise<pg.PoolClient>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | void {
    if (!callback) {
      return new Promise((resolve, reject) => this.connect((err, client) => (err ? reject(err) : resolve(client!))));
    }
    super.connect((err, client, done) => {
      if (err || !client) return callback(err, client, done);
      if ((this.born.get(client) ?? this.epoch) >= this.epoch) return callback(undefined, client, done);
      this.retired++;
      client.release(new Error('connection made before a lost one; closed'));
      this.connect(callback);
    });
  }
}
