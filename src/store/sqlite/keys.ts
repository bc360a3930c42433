import { hashSecret, newKeyId, newSecret, PREFIX_CHARS, type ApiKey, type FoundKey, type KeyPatch, type NewKey } from '../../domain/keys.js';
import type { DB } from './db.js';
import type { Clock } from '../../domain/clock.js';
import { DataVersionWatch } from './data-version.js';
import { frozen, KEY_SELECT, toKey, type KeyRow } from './key-rows.js';
import type { Keys } from '../ports.js';
import { keyChange, type AuditAction } from '../../domain/audit.js';
import type { AuditStore } from './audit.js';

/**
 * Most secret hashes findBySecret remembers (a key is there at most twice: current and previous
 * secret). Reaching it clears the map: simpler than LRU, and a deployment with more live keys
 * than this only pays the SQLite read it paid before the cache existed.
 */
const FOUND_CACHE_MAX = 10_000;

/**
 * Writes made through any KeyStore on a connection, per connection: SQLite's data_version
 * only moves for other connections' commits, so two stores sharing one connection must tell
 * each other.
 */
const ownWrites = new WeakMap<DB, { n: number }>();

/** A write on `db` that changes what keys read (a team's budget, teams.ts): remembered keys are dropped. */
export function keysChanged(db: DB): void {
  const w = ownWrites.get(db);
  if (w) w.n++;
  else ownWrites.set(db, { n: 1 });
}

/**
 * Secrets are stored only as SHA-256; the plaintext exists once, in create's return value.
 *
 * findBySecret runs on every request, so it answers from memory: found keys by secret hash,
 * dropped wholesale whenever anything may have changed a key, i.e. another connection (the
 * CLI, another process) committed to the database, or a KeyStore on this connection wrote
 * a key. Changes made with plain SQL on this connection are not seen; make them through a
 * KeyStore.
 */
export class KeyStore implements Keys {
  private readonly insertStmt;
  private readonly byHashStmt;
  private readonly byIdStmt;
  private readonly listStmt;
  private readonly revokeStmt;
  private readonly touchStmt;
  private readonly updateStmt;
  private readonly rotateStmt;
  private readonly dataVersion: DataVersionWatch;
  private readonly found = new Map<string, FoundKey>();
  /** Own-write count when `found` was last known to be current. */
  private seenWrites: number;
  private readonly writes: { n: number };

  /** `audit`: the log in the same database, written in each audited change's transaction. */
  constructor(
    private readonly db: DB,
    private readonly clock: Clock,
    private readonly audit: AuditStore | null = null,
  ) {
    let writes = ownWrites.get(db);
    if (!writes) ownWrites.set(db, (writes = { n: 0 }));
    this.writes = writes;
    this.seenWrites = writes.n;
    this.dataVersion = new DataVersionWatch(db);
    this.insertStmt = db.prepare(`INSERT INTO api_keys
      (id, name, owner, prefix, secret_hash, created_at, updated_at, expires_at, rate, credits, endpoints, strategies, cache_isolated)
      VALUES (@id, @name, @owner, @prefix, @hash, @now, @now, @expires, @rate, @credits, @endpoints, @strategies, @isolated)`);
    // The OR uses both unique indexes; a rotated-away secret still finds its key during the overlap.
    this.byHashStmt = db.prepare<[string, string], KeyRow>(`${KEY_SELECT} WHERE k.secret_hash = ? OR k.prev_secret_hash = ?`);
    this.byIdStmt = db.prepare<[string], KeyRow>(`${KEY_SELECT} WHERE k.id = ?`);
    this.listStmt = db.prepare<[], KeyRow>(`${KEY_SELECT} ORDER BY k.created_at, k.id`);
    this.revokeStmt = db.prepare('UPDATE api_keys SET revoked_at = ?, updated_at = ? WHERE id = ? AND revoked_at IS NULL');
    this.touchStmt = db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?');
    this.updateStmt = db.prepare(`UPDATE api_keys SET name = @name, owner = @owner, expires_at = @expires, rate = @rate,
      credits = @credits, endpoints = @endpoints, strategies = @strategies, cache_isolated = @isolated, updated_at = @now WHERE id = @id`);
    this.rotateStmt = db.prepare(`UPDATE api_keys SET prev_secret_hash = secret_hash, prev_expires_at = @prevExpires,
      secret_hash = @hash, prefix = @prefix, updated_at = @now WHERE id = @id AND revoked_at IS NULL`);
  }

  create(input: NewKey, actor?: string): { key: ApiKey; secret: string } {
    const secret = newSecret();
    const id = newKeyId();
    const now = this.clock.now();
    const key = this.audited(actor, 'key.create', id, () => {
      this.insertStmt.run({
        id,
        name: input.name,
        owner: input.team ?? null,
        prefix: secret.slice(0, PREFIX_CHARS),
        hash: hashSecret(secret),
        now,
        expires: input.expiresAt ?? null,
        rate: input.rate ?? null,
        credits: input.credits ?? null,
        endpoints: input.endpoints ? JSON.stringify(input.endpoints) : null,
        strategies: input.strategies ? JSON.stringify(input.strategies) : null,
        isolated: input.cacheIsolated ? 1 : 0,
      });
      return true;
    });
    return { key: key!, secret };
  }

  /**
   * The key a presented secret belongs to, whatever its state; null if none. `previous`
   * says the secret is the one a rotation replaced (valid until `previousExpiresAt`).
   *
   * Revocation, expiry and the end of an overlap are decided by the caller against the clock
   * (auth.ts keyRefusal), so a remembered key still stops working on time. The result is
   * shared and frozen; its `lastUsedAt` is not kept current (see ApiKey).
   */
  findBySecret(secret: string): FoundKey | null {
    const hash = hashSecret(secret);
    // Checked before the read below: a commit landing between the two then only costs an
    // extra reload next time, where the other order could remember a pre-commit row forever.
    if (this.dataVersion.changed() || this.writes.n !== this.seenWrites) {
      this.found.clear();
      this.seenWrites = this.writes.n;
    }
    const hit = this.found.get(hash);
    if (hit) return hit;
    const row = this.byHashStmt.get(hash, hash);
    // Unknown secrets are not remembered: anyone can send any number of them.
    if (!row) return null;
    const found: FoundKey = Object.freeze({ key: frozen(toKey(row)), previous: row.secret_hash !== hash });
    // Inside a transaction the row may yet be rolled back, which no counter would reveal.
    if (!this.db.inTransaction) {
      if (this.found.size >= FOUND_CACHE_MAX) this.found.clear();
      this.found.set(hash, found);
    }
    return found;
  }

  /** Apply a patch; returns the updated key, or null when there is no such key. */
  update(id: string, patch: KeyPatch, actor?: string): ApiKey | null {
    return this.audited(actor, 'key.update', id, (k) => {
      if (!k) return false;
      this.updateOne(k, patch);
      return true;
    });
  }

  private updateOne(k: ApiKey, patch: KeyPatch): void {
    const id = k.id;
    const pick = <T>(v: T | undefined, cur: T): T => (v === undefined ? cur : v);
    const list = (v: readonly string[] | null) => (v ? JSON.stringify(v) : null);
    this.updateStmt.run({
      id,
      now: this.clock.now(),
      name: pick(patch.name, k.name),
      owner: pick(patch.team, k.team),
      expires: pick(patch.expiresAt, k.expiresAt),
      rate: pick(patch.rate, k.rate),
      credits: pick(patch.credits, k.credits),
      endpoints: list(pick(patch.endpoints, k.endpoints)),
      strategies: list(pick(patch.strategies, k.strategies)),
      isolated: pick(patch.cacheIsolated, k.cacheIsolated) ? 1 : 0,
    });
  }

  /**
   * A new secret for the same key (same id, limits, usage and ledger). The replaced secret
   * keeps working for `overlapMs` so clients can switch without downtime; a second rotation
   * ends the first one's overlap. Null when the key does not exist or is revoked.
   */
  rotate(id: string, overlapMs: number, actor?: string): { key: ApiKey; secret: string } | null {
    const secret = newSecret();
    const now = this.clock.now();
    const key = this.audited(actor, 'key.rotate', id, () =>
      this.rotateStmt.run({ id, now, prevExpires: now + overlapMs, hash: hashSecret(secret), prefix: secret.slice(0, PREFIX_CHARS) }).changes > 0,
    );
    return key ? { key, secret } : null;
  }

  get(id: string): ApiKey | null {
    const row = this.byIdStmt.get(id);
    return row ? toKey(row) : null;
  }

  list(): ApiKey[] {
    return this.listStmt.all().map(toKey);
  }

  /** Returns false when the key does not exist or was already revoked. */
  revoke(id: string, actor?: string): boolean {
    const now = this.clock.now();
    return this.audited(actor, 'key.revoke', id, () => this.revokeStmt.run(now, now, id).changes > 0) !== null;
  }

  /**
   * Run `change` on key `id` (given the key as it was, or null) in one transaction with its
   * audit entry, when there is an actor and `change` says it changed something. Returns the
   * key as it became, or null when nothing changed.
   */
  private audited(actor: string | undefined, action: AuditAction, id: string, change: (before: ApiKey | null) => boolean): ApiKey | null {
    const run = () => {
      const before = action === 'key.create' ? null : this.get(id);
      if (!change(before)) return null;
      const after = this.get(id)!;
      if (actor !== undefined && this.audit) this.audit.insert(keyChange(actor, action, before, after));
      return after;
    };
    try {
      return actor !== undefined && this.audit ? this.db.transaction(run).immediate() : run();
    } finally {
      this.wrote();
    }
  }

  /**
   * Deliberately keeps remembered keys: it runs every few seconds for every active key, and
   * dropping them each time would bring back the reads the cache exists to save.
   */
  touch(id: string, at: number): void {
    this.touchStmt.run(at, id);
  }

  /** Many touches in one transaction: one lock wait and one commit for the whole batch. */
  touchAll(lastUsed: ReadonlyMap<string, number>): void {
    this.db
      .transaction(() => {
        for (const [id, at] of lastUsed) this.touchStmt.run(at, id);
      })
      .immediate();
  }

  private wrote(): void {
    this.writes.n++;
  }
}
