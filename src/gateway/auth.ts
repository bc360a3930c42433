import { createHash, timingSafeEqual } from 'node:crypto';
import { failure, type Failure } from '../api/errors.js';
import type { ApiKey, KeyStore } from '../store/keys.js';

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
 */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(header);
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

const KEY_SHAPE = /^tg_[0-9A-Za-z]{32,128}$/;

export function authenticate(header: string | undefined, keys: KeyStore, now: number): ApiKey | Failure {
  const token = bearerToken(header);
  if (token === null) return failure('MISSING_API_KEY');
  // Malformed tokens are refused without a database lookup.
  const found = KEY_SHAPE.test(token) ? keys.findBySecret(token) : null;
  return keyRefusal(found?.key ?? null, now, found?.previous) ?? found!.key;
}
