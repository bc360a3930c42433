import { createHash, hash as oneShotHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { failure, type Failure } from './errors.js';

/*
 * Key rules (DESIGN §6), shared by every backend: the shape of a key and its secret, how a
 * secret is hashed (only the hash is stored), and which 401 a presented key earns.
 */

export interface ApiKey {
  readonly id: string;
  readonly name: string;
  /** The team the key belongs to (domain/teams.ts); null: none. Stored in the `owner` column it replaced. */
  readonly team: string | null;
  /**
   * The team's credit budget as it was when the key was read (joined from the teams table), so
   * that a request's budgets come with its key: null when the key has no team or the team no budget.
   */
  readonly teamCredits: string | null;
  readonly prefix: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly expiresAt: number | null;
  readonly revokedAt: number | null;
  /**
   * Written in batches, so never exact; on a key from findBySecret it is as of when that key
   * was remembered, possibly much older. Read it from get() or list().
   */
  readonly lastUsedAt: number | null;
  readonly rate: string | null;
  readonly credits: string | null;
  readonly endpoints: readonly string[] | null;
  readonly strategies: readonly string[] | null;
  readonly cacheIsolated: boolean;
  /** Until when the secret replaced by the last rotation still authenticates; null if never rotated. */
  readonly previousExpiresAt: number | null;
}

export interface NewKey {
  name: string;
  team?: string | null;
  expiresAt?: number | null;
  rate?: string | null;
  credits?: string | null;
  endpoints?: readonly string[] | null;
  strategies?: readonly string[] | null;
  cacheIsolated?: boolean;
}

/** A change to a key: an absent field stays as it is; null clears it. */
export type KeyPatch = Partial<NewKey>;

export interface FoundKey {
  readonly key: ApiKey;
  /** The secret is the one the last rotation replaced (valid until `key.previousExpiresAt`). */
  readonly previous: boolean;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_CHARS = 40;
/** "tg_" + 8: enough to tell keys apart in lists, useless to guess with. */
export const PREFIX_CHARS = 11;
const KEY_SHAPE = /^tg_[0-9A-Za-z]{32,128}$/;

/** Uniform base62 (rejection-free via randomInt) so every character carries log2(62) bits. */
function base62(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += BASE62[randomInt(62)];
  return s;
}

/** A new secret: `tg_` and 40 base62 characters (238 bits). */
export function newSecret(): string {
  return 'tg_' + base62(SECRET_CHARS);
}

/** Same digest as createHash('sha256') over UTF-8; the one-shot form costs a third of it, on every request. */
export function hashSecret(secret: string): string {
  return oneShotHash('sha256', secret, 'hex');
}

export function newKeyId(): string {
  return 'key_' + randomBytes(12).toString('hex');
}

/** Whether a token could be a key at all: malformed tokens are refused without a store lookup. */
export function keyShaped(token: string): boolean {
  return KEY_SHAPE.test(token);
}

/** SHA-256 of a token: comparing fixed-length digests is constant-time whatever the token length. */
export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Whether the header carries the Bearer token whose digest is `expected`, in constant time. */
export function bearerMatches(header: string | undefined, expected: Buffer): boolean {
  const given = bearerToken(header);
  return given !== null && timingSafeEqual(tokenDigest(given), expected);
}

/**
 * The presented secret from an Authorization header, or null. Only the Bearer scheme
 * counts (case-insensitive, RFC 7235); a key in the query string is never looked at.
 * Separated by spaces or tabs only (RFC 9110 §11.4 and its OWS): JavaScript's `\s` also took a
 * no-break space, which Node reads from the header's 0xA0 byte, and other Unicode spaces.
 */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^[ \t]*bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i.exec(header);
  return m ? m[1]! : null;
}

/** Pure decision over a found key: which 401 applies, if any. */
export function keyRefusal(key: ApiKey | null, now: number, previous = false): Failure | null {
  if (!key) return failure('INVALID_API_KEY');
  if (key.revokedAt !== null && key.revokedAt <= now) return failure('API_KEY_REVOKED');
  if (key.expiresAt !== null && key.expiresAt <= now) return failure('API_KEY_EXPIRED');
  if (previous && (key.previousExpiresAt === null || key.previousExpiresAt <= now)) {
    return failure('API_KEY_EXPIRED', 'This API key secret was replaced by a rotation and its overlap has ended.');
  }
  return null;
}

/** Whom a key's provider calls are for, in the provider client's fair share of concurrency: its team, or the key alone. */
export function keyTenant(key: Pick<ApiKey, 'id' | 'team'>): string {
  return key.team === null ? `key:${key.id}` : `team:${key.team}`;
}
