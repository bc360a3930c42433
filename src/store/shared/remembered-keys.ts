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
 * hash) was found to be, so that a request reads no database. Forgotten wholesale when any
 * replica, the admin API or the CLI changes a key (PgChangeFeed, within a fraction of a
 * second; after a lost notification connection, as soon as it is back). Unknown secrets are
 * remembered too: a client retrying a wrong key costs the database nothing.
 *
 * While PostgreSQL is down, keys remembered keep working and others are refused as a storage
 * failure: nobody can change a key then, so what is remembered is still true. A replica cut
 * off from PostgreSQL alone, while others change keys, hears of the change through Redis
 * (redis/change-beacon.ts) and forgets what it remembers: its requests then fail as storage
 * failures rather than accept a key revoked meanwhile.
 */
export class RememberedKeys implements Keys {
  private readonly found = new Map<string, FoundKey | null>();
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
      if (c.topic === 'keys') this.forget();
    });
  }

  findBySecret(secret: string): MaybePromise<FoundKey | null> {
    const hash = hashSecret(secret);
    const known = this.found.get(hash);
    if (known !== undefined) return known;
    const epoch = this.epoch;
    return this.table.findByHash(hash).then((k) => {
      if (epoch === this.epoch) {
        if (this.found.size >= REMEMBERED_MAX) this.found.clear();
        this.found.set(hash, k);
      }
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
    return this.changing(this.table.create(input, actor));
  }

  update(id: string, patch: KeyPatch, actor?: string): Promise<ApiKey | null> {
    return this.changing(this.table.update(id, patch, actor));
  }

  rotate(id: string, overlapMs: number, actor?: string): Promise<{ key: ApiKey; secret: string } | null> {
    return this.changing(this.table.rotate(id, overlapMs, actor));
  }

  revoke(id: string, actor?: string): Promise<boolean> {
    return this.changing(this.table.revoke(id, actor));
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
   * This replica's own change is seen by its next request, before the notification comes back;
   * the others are told through Redis too before the change is answered as done.
   */
  private async changing<T>(p: Promise<T>): Promise<T> {
    try {
      return await p;
    } finally {
      await this.changed();
    }
  }

  private forget(): void {
    this.epoch++;
    this.found.clear();
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
