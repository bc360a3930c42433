import type { ChangeFeed, ChangeTopic } from '../ports.js';
import type { DB } from './db.js';

/** How often the databases are looked at while anyone listens. */
export const CHANGE_POLL_MS = 250;

interface Watched {
  readonly listeners: Set<() => void>;
  /** The connection last looked at, its statement and the version it answered. */
  db: DB | null;
  stmt: { get(): unknown } | null;
  seen: unknown;
}

/**
 * The SQLite ChangeFeed: `PRAGMA data_version` of the database holding each topic, looked at
 * every CHANGE_POLL_MS while anyone listens (an unref'd timer: it never keeps the process
 * alive). The version moves with every commit of another connection (the CLI, another
 * process) to the file, never with this connection's own: `keys` fires for any such commit
 * to tollgate.db, a superset of the changes to api_keys, and `cache` for cache.db.
 *
 * The stores' own look at the version (data-version.ts, at most every 10 ms) is what
 * keeps the request path current; this feed is for holders of memory outside them.
 */
export class DataVersionFeed implements ChangeFeed {
  private readonly topics = new Map<ChangeTopic, Watched>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  /** `source(topic)`: the connection of the database holding `topic`, or null while it is not open. */
  constructor(
    private readonly source: (topic: ChangeTopic) => DB | null,
    private readonly everyMs = CHANGE_POLL_MS,
  ) {}

  subscribe(topic: ChangeTopic, listener: () => void): () => void {
    let w = this.topics.get(topic);
    if (!w) this.topics.set(topic, (w = { listeners: new Set(), db: null, stmt: null, seen: undefined }));
    // A new listener is told of changes from now on; one already there keeps its baseline.
    if (w.listeners.size === 0) this.look(topic, w);
    w.listeners.add(listener);
    if (!this.timer && !this.closed) {
      this.timer = setInterval(() => this.poll(), this.everyMs);
      this.timer.unref();
    }
    const watched = w;
    return () => {
      watched.listeners.delete(listener);
      if (this.listening() === 0) this.stop();
    };
  }

  /** Stop looking; listeners are dropped. */
  close(): void {
    this.closed = true;
    this.stop();
    this.topics.clear();
  }

  private poll(): void {
    for (const [topic, w] of this.topics) {
      if (w.listeners.size === 0 || !this.look(topic, w)) continue;
      for (const listener of [...w.listeners]) {
        try {
          listener();
        } catch {
          /* a listener's failure is its own; the others still hear */
        }
      }
    }
  }

  /** Read the topic's version; true when it moved since the last look at the same connection. */
  private look(topic: ChangeTopic, w: Watched): boolean {
    const db = this.source(topic);
    if (!db?.open) return false;
    if (db !== w.db) {
      // First sight of this connection: its version is the baseline, not a change.
      w.db = db;
      w.stmt = db.prepare('PRAGMA data_version').pluck();
      w.seen = w.stmt.get();
      return false;
    }
    let v: unknown;
    try {
      v = w.stmt!.get();
    } catch {
      return false; // busy or closing: looked at again next time
    }
    if (v === w.seen) return false;
    w.seen = v;
    return true;
  }

  private listening(): number {
    let n = 0;
    for (const w of this.topics.values()) n += w.listeners.size;
    return n;
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
