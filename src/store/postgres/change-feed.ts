import pg from 'pg';
import type { ChangeFeed, ChangeTopic } from '../ports.js';
import type { StorageLog } from '../backend.js';

/** The channel every writer of keys or cache entries notifies. */
export const CHANGES_CHANNEL = 'tollgate_changes';

/**
 * Inside a write's transaction: tell every replica what changed, as `topic` or `topic:key`
 * (one cache entry). PostgreSQL delivers it when the transaction commits, and only then: a
 * replica that drops what it remembers on the notification and reads again sees the write.
 * (Redis pub/sub would be sent after the commit, by a process that may die in between.)
 */
export const NOTIFY_SQL = `SELECT pg_notify('${CHANGES_CHANNEL}', $1)`;

/** How long heardElsewhere waits for the listening connection to answer: the beacon's 0.5 s and this stay under guarantee 5's 2 s. */
const CONFIRM_MS = 1_000;

/** A connect attempt's own limit: the first at startup, and each reconnect. */
const CONNECT_MS = 5_000;
/** After a loss or a failed attempt, the next attempt. */
const RETRY_MS = 500;
/** While an attempt is pending, the next one (see retry). */
const HEDGE_MS = 1_000;
const MAX_ATTEMPTS = 5;

/** NOTIFY's payload is limited to 8000 bytes: a longer key is announced as its whole topic. */
const MAX_PAYLOAD = 7_900;

/** The payload announcing that `key` of `topic` changed (or the whole topic when the key is too long to say). */
export function changePayload(topic: ChangeTopic, key?: string): string {
  if (key === undefined) return topic;
  const p = `${topic}:${key}`;
  return Buffer.byteLength(p) <= MAX_PAYLOAD ? p : topic;
}

/**
 * The payload naming a write (store/change-stamps.ts), sent in the write's transaction beside
 * its change: heard together with it, since a transaction's notifications arrive together at
 * its commit. Its own payload, not a suffix of the change's: a replica of an earlier version
 * ignores a topic it does not know, and still reads the change's payload as it always did.
 */
export function stampPayload(stamp: string): string {
  return `stamp:${stamp}`;
}

/** Stamps heard lately, to answer heardElsewhere: far more than announces carry between two reads of the counters. */
const HEARD_STAMPS_MAX = 4_096;

/** What changed: one key of a topic, or (key null) anything in it. */
export type Change = { readonly topic: ChangeTopic; readonly key: string | null };

/**
 * Changes any replica made, from PostgreSQL's LISTEN/NOTIFY on a connection of its own.
 *
 * `subscribe` (the port) hears of a topic at most every `everyMs`: a burst of writes is one
 * call per listener. `onChange` hears of each change as it arrives, keyed, for the memory tiers
 * (shared/), which forget one entry rather than all of them.
 *
 * A notification sent while the connection was down is never delivered, so after a lost
 * connection the feed reconnects on its own and then announces every topic as changed:
 * whatever was remembered meanwhile is dropped. A replica's own writes notify it too.
 *
 * A listening connection sends nothing, so a network gone silent (a partition, a database
 * host that vanished or failed over) would never end it: the feed would stay deaf, and the
 * replica would go on serving revoked keys and purged entries. It is asked `SELECT 1` every
 * `checkEveryMs`; no answer within `checkTimeoutMs` counts as a lost connection.
 */
export class PgChangeFeed implements ChangeFeed {
  private readonly listeners = new Map<ChangeTopic, Set<() => void>>();
  private readonly keyed = new Set<(c: Change) => void>();
  private readonly changed = new Set<ChangeTopic>();
  /** Stamps of writes whose notifications were heard, oldest first (a Set keeps insertion order). */
  private readonly stamps = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  private readonly checker: NodeJS.Timeout;
  private checking = false;
  private client: pg.Client | null = null;
  private reconnecting: NodeJS.Timeout | null = null;
  /** Reconnect attempts not yet ended. */
  private pending = 0;
  private closed = false;

  private constructor(
    private readonly url: string,
    everyMs: number,
    checkEveryMs: number,
    private readonly checkTimeoutMs: number,
    private readonly log?: StorageLog,
  ) {
    this.timer = setInterval(() => this.announce(), everyMs);
    this.timer.unref();
    this.checker = setInterval(() => this.check(), checkEveryMs);
    this.checker.unref();
  }

  static async open(url: string, opts: { everyMs?: number; checkEveryMs?: number; checkTimeoutMs?: number; log?: StorageLog } = {}): Promise<PgChangeFeed> {
    const feed = new PgChangeFeed(url, opts.everyMs ?? 200, opts.checkEveryMs ?? 5_000, opts.checkTimeoutMs ?? 2_000, opts.log);
    await feed.connect();
    return feed;
  }

  /** Whether notifications are being received now (readiness reports it). */
  get listening(): boolean {
    return this.client !== null;
  }

  subscribe(topic: ChangeTopic, listener: () => void): () => void {
    let set = this.listeners.get(topic);
    if (!set) this.listeners.set(topic, (set = new Set()));
    const mine = () => listener();
    set.add(mine);
    return () => void set.delete(mine);
  }

  /** Every change as it arrives, keyed when the writer said which entry. */
  onChange(listener: (c: Change) => void): () => void {
    const mine = (c: Change) => listener(c);
    this.keyed.add(mine);
    return () => void this.keyed.delete(mine);
  }

  /**
   * `topic` changed, as heard another way (redis/change-beacon.ts, for a replica cut off from
   * PostgreSQL alone), by the writes `stamps` names (null: writes it cannot name).
   *
   * When every stamp was heard here, so were the changes: nothing to forget, even if the
   * database went away just after (it is then often the case that it cannot be read again).
   * Otherwise the listening connection is asked whether it is alive: PostgreSQL sends a
   * listening session the notifications committed before a query ahead of its answer, so an
   * answer means the NOTIFY was heard already, and nothing is forgotten twice. No answer within
   * CONFIRM_MS, or no connection: its listeners forget everything of the topic.
   */
  heardElsewhere(topic: ChangeTopic, stamps: readonly string[] | null = null): void {
    const heardAll = () => stamps !== null && stamps.length > 0 && stamps.every((s) => this.stamps.has(s));
    if (heardAll()) return;
    const client = this.client;
    if (!client) return this.heard(topic);
    let decided = false;
    const forget = () => {
      if (decided) return;
      decided = true;
      // The notifications a dying connection delivered before its error were read before it.
      if (!heardAll()) this.heard(topic);
    };
    const timer = setTimeout(forget, CONFIRM_MS);
    timer.unref();
    client.query('SELECT 1').then(
      () => {
        decided = true;
        clearTimeout(timer);
      },
      () => {
        clearTimeout(timer);
        forget();
      },
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    clearInterval(this.checker);
    if (this.reconnecting) clearTimeout(this.reconnecting);
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    const client = await this.attempt();
    if (this.closed) return void client.end().catch(() => {});
    this.client = client;
  }

  /** A new listening connection, or the reason it could not be made. */
  private async attempt(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.url, application_name: 'tollgate-changes', connectionTimeoutMillis: CONNECT_MS, query_timeout: this.checkTimeoutMs });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (n) => this.heard(n.payload ?? ''));
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGES_CHANNEL}`);
    } catch (err) {
      // Not awaited: on a silent network the goodbye is never answered, and the retry must not wait for it.
      void client.end().catch(() => {});
      throw err;
    }
    return client;
  }

  /** The connection answers, or is given up as lost (and closed without waiting for a goodbye that may never come). */
  private check(): void {
    const client = this.client;
    if (!client || this.checking) return;
    this.checking = true;
    client.query('SELECT 1').then(
      () => {
        this.checking = false;
      },
      () => {
        this.checking = false;
        this.lost(client);
        void client.end().catch(() => {});
      },
    );
  }

  private lost(client: pg.Client): void {
    if (this.client !== client || this.closed) return;
    this.client = null;
    this.log?.warn({}, 'change notifications lost; reconnecting');
    this.retry();
  }

  /**
   * Reconnect, 0.5 s after the loss and again after each failure. An attempt may hang for its
   * whole connect timeout: one begun during a partition and not answered when the network
   * heals (the server forgot it). So while one is pending, another starts every HEDGE_MS, up
   * to MAX_ATTEMPTS at once; the first to listen is kept, the others are closed. The feed is
   * back within about HEDGE_MS of the database being reachable, and a database slow to accept
   * (TLS, a far region) still has the whole connect timeout.
   */
  private retry(): void {
    if (this.closed || this.reconnecting) return;
    this.reconnecting = setTimeout(() => this.hedge(), RETRY_MS);
    this.reconnecting.unref();
  }

  private hedge(): void {
    this.reconnecting = null;
    if (this.closed || this.client) return;
    this.pending++;
    if (this.pending < MAX_ATTEMPTS) {
      this.reconnecting = setTimeout(() => this.hedge(), HEDGE_MS);
      this.reconnecting.unref();
    }
    this.attempt().then(
      (client) => {
        this.pending--;
        if (this.closed || this.client) return void client.end().catch(() => {});
        this.client = client;
        if (this.reconnecting) clearTimeout(this.reconnecting);
        this.reconnecting = null;
        this.log?.info({}, 'change notifications resumed');
        // What was sent while nobody listened is lost: everything may have changed.
        this.heard('keys');
        this.heard('cache');
      },
      () => {
        this.pending--;
        // Refused at once: again in RETRY_MS. Timed out: a hedge may be due already.
        if (!this.client) this.retry();
      },
    );
  }

  private heard(payload: string): void {
    const colon = payload.indexOf(':');
    const topic = colon < 0 ? payload : payload.slice(0, colon);
    if (topic === 'stamp' && colon > 0) return this.heardStamp(payload.slice(colon + 1));
    if (topic !== 'keys' && topic !== 'cache') return;
    this.changed.add(topic);
    const change: Change = { topic, key: colon < 0 ? null : payload.slice(colon + 1) };
    for (const l of this.keyed) l(change);
  }

  private heardStamp(stamp: string): void {
    if (this.stamps.size >= HEARD_STAMPS_MAX) this.stamps.delete(this.stamps.values().next().value!);
    this.stamps.add(stamp);
  }

  private announce(): void {
    for (const topic of this.changed) for (const l of this.listeners.get(topic) ?? []) l();
    this.changed.clear();
  }
}
