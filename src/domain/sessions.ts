import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/*
 * Dashboard sessions (README "Dashboard"): the admin token is exchanged once for a random
 * session id, sent back as a cookie. Storage keeps only a keyed hash of the id, so that a copy
 * of the database lets no one sign in, and the hash is keyed with the admin token's digest:
 * change the token and every session's hash changes, so every session ends at once, on every
 * replica, without a write. Pure rules here; the port is store/ports.ts Sessions.
 */

/** A session as storage keeps it: the hash of its id (never the id), and its lifetime. */
export interface DashboardSession {
  readonly idHash: string;
  readonly createdAt: number;
  readonly expiresAt: number;
}

/** The cookie's name. */
export const SESSION_COOKIE = 'tollgate_session';

/** 32 random bytes, base64url: what the cookie carries. */
export function newSessionId(): string {
  return randomBytes(32).toString('base64url');
}

/** A session id's shape: anything else in the cookie is not looked up. */
export function isSessionId(s: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(s);
}

/**
 * What storage keeps of a session id: HMAC-SHA256 keyed with the admin token's digest. Without
 * the id (which only the cookie holds) the stored hash cannot be used to test token guesses.
 */
export function sessionIdHash(id: string, adminTokenDigest: Buffer): string {
  return createHmac('sha256', adminTokenDigest).update(id, 'utf8').digest('hex');
}

/**
 * The session's CSRF token (a synchronizer token in every form): derived from the session id,
 * which the server reads from the cookie on each request, so nothing more is stored, and a page
 * of another site, which can make the browser send the cookie but never read it, cannot know it.
 */
export function csrfToken(id: string): string {
  return createHmac('sha256', id).update('tollgate-dashboard-csrf', 'utf8').digest('base64url');
}

/** Whether two strings are equal, in time that does not depend on where they differ. */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Who a session's changes are by in the audit log: `dashboard:` and the first 8 hex digits of its hash. */
export function sessionActor(idHash: string): string {
  return `dashboard:${idHash.slice(0, 8)}`;
}
