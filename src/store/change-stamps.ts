import { randomBytes } from 'node:crypto';
import type { ChangeTopic } from './ports.js';

/** Stamps kept waiting for an announce, per topic: writes that never announce must not grow it without end. */
const PENDING_MAX = 32;

/**
 * Names each change a process writes to PostgreSQL, so that a replica told of it through Redis
 * (redis/change-beacon.ts) can tell whether it already heard it through NOTIFY.
 *
 * The write sends its stamp in a NOTIFY of its own, in the same transaction as the change's
 * (postgres/change-feed.ts stampPayload): PostgreSQL delivers a transaction's notifications
 * together at its commit, so a replica that heard the stamp heard the change. The announce
 * that follows the commit carries the stamps of the writes since the previous announce. A
 * replica that heard every stamp of every counter move has nothing to forget, even when
 * PostgreSQL went away just after: it keeps serving what it remembers (issue #13, guarantee 7)
 * instead of forgetting it and answering 503 until the database is back.
 *
 * An announce takes every stamp issued so far, also those of writes still in flight: their
 * NOTIFY comes later or never, and a stamp not heard only makes the replica forget, as it did
 * before stamps (the safe side). Stamps are never reused: a process part, random, and a count.
 */
export class ChangeStamps {
  private seq = 0;
  private readonly process = randomBytes(6).toString('base64url');
  /** Per topic, the stamps since the last take; null when there were more than PENDING_MAX. */
  private readonly pending = new Map<ChangeTopic, string[] | null>();

  /** A new stamp for one write of `topic`, kept for the topic's next announce. */
  next(topic: ChangeTopic): string {
    const stamp = `${this.process}.${++this.seq}`;
    const list = this.pending.has(topic) ? this.pending.get(topic)! : [];
    // Too many to name: the announce says so (null), and replicas forget rather than trust a partial list.
    this.pending.set(topic, list === null || list.length >= PENDING_MAX ? null : [...list, stamp]);
    return stamp;
  }

  /** The stamps issued for `topic` since the last take; null when they are too many to name. */
  take(topic: ChangeTopic): string[] | null {
    const list = this.pending.has(topic) ? this.pending.get(topic)! : [];
    this.pending.delete(topic);
    return list;
  }
}
