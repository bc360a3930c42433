import { hashSecret, type ApiKey, type FoundKey, type KeyPatch, type NewKey } from '../../domain/keys.js';
import type { MaybePromise, Keys, Teams } from '../ports.js';
import type { PgChangeFeed } from '../postgres/change-feed.js';
import type { PgKeys } from '../postgres/keys.js';
import type { PgTeams } from '../postgres/teams.js';

/**
 * Most secret hashes remembered (a key is there at most twice: current and previous secret).
 * Reaching it forgets them all: simpler than LRU, and a deployment with more live keys than
 * this pays one indexed read per request, as it would without memory.
 */
const REMEMBERED_MAX = 10_000;

/**
 * The shared key table with this replica's memory of it: what each presented secret (by its
 * hash) was found to be, so that a request reads no database. When any replica, the admin API
 * or the CLI changes a key, that key is forgotten, with every secret remembered as unknown (it
 * may be the key's new one); a change of a team, a notification that names no key and a lost
 * notification connection forget everything (PgChangeFeed, within a fraction of a second).
 * Forgetting only the key changed matters when PostgreSQL goes down: every key not remembered
 * is refused then, and a key made just before an outage took all the others with it. Unknown
 * secrets are remembered too: a client retrying a wrong key costs the database nothing.
 *
 * While PostgreSQL is down, keys remembered keep working and others are refused as a storage
 * failure: nobody can change a key then, so what is remembered is still true. A replica cut
 * off from PostgreSQL alone, while others change keys, hears of the change through Redis
 * (redis/change-beacon.ts) and forgets what it remembers: its requests then fail as storage
 * failures rather than accept a key revoked meanwhile.
 */
export class RememberedKeys implements Keys {
  private readonly found = new Map<string, FoundKey | null>();
  /** The secret hashes remembered for each key id (its current and previous secret). */
  private readonly hashesOf = new Map<string, Set<string>>();
  /** Bumped when keys change: a read begun before must not store its (maybe older) answer. */
  private epoch = 0;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly table: PgKeys,
    changes: PgChangeFeed,
    /** Tells the replicas that cannot hear PostgreSQL's notification (redis/change-beacon.ts); never rejects. */
    private readonly announce: () => Promise<void> = () => Promise.resolve(),
  ) {
    this.unsubscribe = changes.onChange((c) => {
      if (c.topic !== 'keys') return;
      if (c.key === null) this.forget();
      else this.forgetKey(c.key);
    });
  }

  findBySecret(secret: string): MaybePromise<FoundKey | null> {
    const hash = hashSecret(secret);
    const known = this.found.get(hash);
    if (known !== undefined) return known;
    const epoch = this.epoch;
    return this.table.findByHash(hash).then((k) => {
      if (epoch === this.epoch) this.remember(hash, k);
      return k;
    });
  }

  get(id: string): Promise<ApiKey | null> {
    return this.table.get(id);
  }

  list(): Promise<ApiKey[]> {
    return this.table.list();
  }

  create(input: NewKey, actor?: string): Promise<{ key: ApiKey; secret: string }> {
    return this.changing(this.table.create(input, actor), (r) => r.key.id);
  }

  update(id: string, patch: KeyPatch, actor?: string): Promise<ApiKey | null> {
    return this.changing(this.table.update(id, patch, actor), () => id);
  }

  rotate(id: string, overlapMs: number, actor?: string): Promise<{ key: ApiKey; secret: string } | null> {
    return this.changing(this.table.rotate(id, overlapMs, actor), () => id);
  }

  revoke(id: string, actor?: string): Promise<boolean> {
    return this.changing(this.table.revoke(id, actor), () => id);
  }

  /**
   * Something keys are read with changed (a team's budget, shared/backend.ts): this replica's
   * next request reads its key again, before the notification comes back.
   */
  changed(): Promise<void> {
    this.forget();
    return this.announce();
  }

  /** How many secrets are remembered (metrics, tests). */
  remembered(): number {
    return this.found.size;
  }

  close(): void {
    this.unsubscribe();
    this.forget();
  }

  /**
   * This replica's own change is seen by its next request, before the notification comes back
   * (the key changed alone, when it is known; everything when the write failed, which may have
   * landed); the others are told through Redis too before the change is answered as done.
   */
  private async changing<T>(p: Promise<T>, idOf: (result: T) => string): Promise<T> {
    let id: string | null = null;
    try {
      const result = await p;
      id = idOf(result);
      return result;
    } finally {
      if (id === null) this.forget();
      else this.forgetKey(id);
      await this.announce();
    }
  }

  private remember(hash: string, found: FoundKey | null): void {
    // Full: a clean slate, not a change (a read under way may still store its answer).
    if (this.found.size >= REMEMBERED_MAX) this.drop();
    this.found.set(hash, found);
    if (!found) return;
    let hashes = this.hashesOf.get(found.key.id);
    if (!hashes) this.hashesOf.set(found.key.id, (hashes = new Set()));
    hashes.add(hash);
  }

  private forget(): void {
    this.epoch++;
    this.drop();
  }

  private drop(): void {
    this.found.clear();
    this.hashesOf.clear();
  }

  /** Key `id` changed: its secrets are forgotten, and every secret remembered as unknown (one may be its new secret). */
  private forgetKey(id: string): void {
    // A read begun before the change must not store its (maybe older) answer, of this key or of an unknown secret.
    this.epoch++;
    for (const hash of this.hashesOf.get(id) ?? []) this.found.delete(hash);
    this.hashesOf.delete(id);
    for (const [hash, found] of this.found) if (found === null) this.found.delete(hash);
  }
}

/** Teams whose changes this replica's remembered keys see at once (the others, by the notification). */
export function rememberedTeams(table: PgTeams, keys: RememberedKeys): Teams {
  return {
    list: () => table.list(),
    get: (name) => table.get(name),
    set: (name, credits, actor) => table.set(name, credits, actor).finally(() => keys.changed()),
    delete: (name, what, actor) => table.delete(name, what, actor).finally(() => keys.changed()),
  };
}
