import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { Clock } from '../domain/clock.js';
import { csrfToken, crossSite, newSessionId, sameSecret, SESSION_COOKIE, sessionActor, sessionCookie, sessionIdHash, sessionLive } from '../domain/sessions.js';
import type { TrustedProxies } from '../domain/trusted-proxies.js';
import type { Sessions } from '../store/ports.js';
import { field, formOf } from './http.js';

/** A signed-in request's session: what its forms and its audit entries need. */
export interface SignedIn {
  /** The id the cookie carries (never stored): the CSRF token is derived from it. */
  readonly id: string;
  readonly idHash: string;
  readonly csrf: string;
  /** `dashboard:<8 hex>` in the audit log. */
  readonly actor: string;
}

/**
 * Sign-in sessions (domain/sessions.ts) over the Sessions port, and the cookie that carries one:
 * HttpOnly (no script reads it), SameSite=Strict (no other site's page makes the browser send
 * it), Path=/ (so that /admin sees it and refuses it cross-site), Max-Age the session's TTL,
 * Secure over TLS or when configured.
 */
export class SessionAuth {
  constructor(
    private readonly sessions: Sessions,
    private readonly adminTokenDigest: Buffer,
    private readonly config: Readonly<Config>,
    private readonly clock: Clock,
    private readonly trusted: TrustedProxies,
  ) {}

  /** The request's live session, or null (no cookie, an unknown, ended or expired session, one older than the configured lifetime, or another admin token's). */
  async load(request: FastifyRequest): Promise<SignedIn | null> {
    const id = sessionCookie(request.headers.cookie);
    if (id === null) return null;
    const idHash = sessionIdHash(id, this.adminTokenDigest);
    const now = this.clock.now();
    const s = await this.sessions.get(idHash, now);
    return s && sessionLive(s, now, this.config.dashboard.sessionTtlMs) ? { id, idHash, csrf: csrfToken(id), actor: sessionActor(idHash) } : null;
  }

  /** A new session for a request that gave the admin token: stored, then its cookie set. */
  async start(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const id = newSessionId();
    const now = this.clock.now();
    const ttl = this.config.dashboard.sessionTtlMs;
    await this.sessions.create({ idHash: sessionIdHash(id, this.adminTokenDigest), createdAt: now, expiresAt: now + ttl });
    reply.header('set-cookie', this.cookie(request, id, Math.floor(ttl / 1000)));
  }

  /** Sign-out: the session deleted for every replica, the cookie cleared. */
  async end(request: FastifyRequest, reply: FastifyReply, s: SignedIn): Promise<void> {
    await this.sessions.revoke(s.idHash);
    reply.header('set-cookie', this.cookie(request, '', 0));
  }

  /** A state-changing request of this session: from this origin, with the session's token in its form. */
  csrfOk(request: FastifyRequest, s: SignedIn): boolean {
    const given = field(formOf(request), '_csrf');
    return !crossSite(request.headers) && given !== undefined && sameSecret(given, s.csrf);
  }

  private cookie(request: FastifyRequest, value: string, maxAge: number): string {
    const secure = this.config.dashboard.secureCookie ?? this.overTls(request);
    return `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
  }

  /** TLS on this socket, or, from a trusted proxy, X-Forwarded-Proto: https. */
  private overTls(request: FastifyRequest): boolean {
    const socket = request.raw.socket as { encrypted?: boolean; remoteAddress?: string };
    if (socket.encrypted) return true;
    const proto = request.headers['x-forwarded-proto'];
    const first = (Array.isArray(proto) ? proto[0] : proto)?.split(',')[0]?.trim().toLowerCase();
    return first === 'https' && this.trusted.has(socket.remoteAddress ?? '');
  }
}
