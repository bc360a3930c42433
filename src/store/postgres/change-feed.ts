import pg from 'pg';
import type { ChangeFeed, ChangeTopic } from '../ports.js';

/** The channel every writer of keys or cache entries notifies, with the topic as payload. */
export const CHANGES_CHANNEL = 'tollgate_changes';

/** Inside (or after) a write: tell every replica that `topic` changed. Delivered when the transaction commits. */
export const NOTIFY_SQL = `SELECT pg_notify('${CHANGES_CHANNEL}', $1)`;

/**
 * Changes any replica made, from PostgreSQL's LISTEN/NOTIFY on a connection of its own.
 * Notifications are gathered and passed on at most every `everyMs`: a burst of writes is one
 * call per listener, not one per write. A replica's own writes notify it too (the ports allow
 * calls when nothing a listener holds changed).
 */
export class PgChangeFeed implements ChangeFeed {
  private readonly listeners = new Map<ChangeTopic, Set<() => void>>();
  private readonly changed = new Set<ChangeTopic>();
  private readonly timer: NodeJS.Timeout;

  private constructor(
    private readonly client: pg.Client,
    everyMs: number,
  ) {
    client.on('notification', (n) => {
      if (n.payload === 'keys' || n.payload === 'cache') this.changed.add(n.payload);
    });
    this.timer = setInterval(() => this.announce(), everyMs);
    this.timer.unref();
  }

  static async open(url: string, everyMs = 200): Promise<PgChangeFeed> {
    const client = new pg.Client({ connectionString: url, application_name: 'tollgate-changes' });
    client.on('error', () => {}); // a dropped connection ends the feed's calls; the next open starts another
    await client.connect();
    await client.query(`LISTEN ${CHANGES_CHANNEL}`);
    return new PgChangeFeed(client, everyMs);
  }

  subscribe(topic: ChangeTopic, listener: () => void): () => void {
    let set = this.listeners.get(topic);
    if (!set) this.listeners.set(topic, (set = new Set()));
    const mine = () => listener();
    set.add(mine);
    return () => void set.delete(mine);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.client.end().catch(() => {});
  }

  private announce(): void {
    for (const topic of this.changed) for (const l of this.listeners.get(topic) ?? []) l();
    this.changed.clear();
  }
}
