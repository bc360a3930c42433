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

/**
 * Whether a stored session is live at `now` under the lifetime configured now: before its own
 * expiry, and younger than `ttlMs`, so that a restart with a shorter `dashboard.sessionTtlMs`
 * ends the older sessions too instead of leaving them the lifetime they were signed in with.
 */
export function sessionLive(s: DashboardSession, now: number, ttlMs: number): boolean {
  return s.expiresAt > now && s.createdAt + ttlMs > now;
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

/** The session id a Cookie header carries, or null (none, or not of a session id's shape). */
export function sessionCookie(header: string | undefined): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    const v = part.slice(eq + 1).trim();
    if (isSessionId(v)) return v;
  }
  return null;
}

/** The request headers the same-origin check reads. */
export interface OriginHeaders {
  readonly host?: string | undefined;
  readonly origin?: string | undefined;
  readonly 'sec-fetch-site'?: string | string[] | undefined;
}

/**
 * Whether a browser says the request came from another site: Sec-Fetch-Site other than
 * same-origin or none (a typed URL, a bookmark), or an Origin whose host is not the one the
 * request was sent to. Browsers send at least one of them on every POST; a request carrying
 * neither is no browser's, and so no forgery made through a victim's browser.
 */
export function crossSite(h: OriginHeaders): boolean {
  const site = h['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return true;
  if (h.origin === undefined) return false;
  try {
    const origin = new URL(h.origin);
    if (origin.protocol !== 'http:' && origin.protocol !== 'https:') return true;
    // The Host header normalised as the Origin's scheme would write it (a default port dropped).
    return h.host === undefined || origin.host !== new URL(`${origin.protocol}//${h.host}`).host;
  } catch {
    return true; // "null" (a sandboxed page, a redirect across origins) or garbage
  }
}
