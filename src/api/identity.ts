import type { EntityKind } from './endpoints.js';

/**
 * Canonical identity of an entity URL: the cache-key part that decides "same entity".
 * Serving one entity's data for another is the worst bug a cache can have here, so the
 * rules only merge spellings that are certainly the same page and never guess beyond that.
 */
export interface UrlIdentity {
  /** `/in/x`, `/pub/x/a/b/c`, `/company/x` or `/school/x`, slug percent-encoded. */
  readonly path: string;
  /** The URL forwarded to the provider: https://www.<domain><path>. */
  readonly url: string;
}

export type UrlParse = { ok: true; identity: UrlIdentity } | { ok: false; reason: string };

const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;
/** Subdomains that are the same site: web, mobile, and country/language editions (de., uk., …). */
const SAME_SITE_SUB = /^(?:www|m|mobile|[a-z]{2}|[a-z]{2}-[a-z]{2})$/;
/** Member-id slugs are opaque base64-like tokens: their case is significant. */
const MEMBER_ID = /^AC[ow]AA/;
/** Characters that never belong in a decoded slug. */
const BAD_SLUG = /[\s/?#\\\u0000-\u001f\u007f]/u;
/** `/pub/name/a/b/c`: the trailing parts of a public profile id are short alphanumerics. */
const PUB_PART = /^[0-9a-z]{1,4}$/i;
const MAX_URL_CHARS = 2048;

const ROOTS: Record<EntityKind, readonly string[]> = {
  profile: ['in', 'pub'],
  company: ['company', 'school'],
};

export function canonicalUrl(input: string, kind: EntityKind, domain: string): UrlParse {
  const raw = input.trim();
  if (raw.length === 0) return { ok: false, reason: 'empty' };
  if (raw.length > MAX_URL_CHARS) return { ok: false, reason: 'too long' };
  const scheme = SCHEME.exec(raw);
  if (scheme && !/^https?$/i.test(scheme[1]!)) return { ok: false, reason: 'scheme' };
  let url: URL;
  try {
    url = new URL(scheme ? raw : `https://${raw}`);
  } catch {
    return { ok: false, reason: 'unparseable' };
  }
  if (url.username || url.password || url.port) return { ok: false, reason: 'authority' };
  if (!sameSite(url.hostname, domain)) return { ok: false, reason: 'host' };

  const segments = url.pathname.split('/').filter((s) => s.length > 0);
  const root = segments[0]?.toLowerCase();
  if (!root || !ROOTS[kind].includes(root)) return { ok: false, reason: 'path' };
  const slug = decodeSlug(segments[1]);
  if (slug === null) return { ok: false, reason: 'slug' };

  const parts = [root, encodeURIComponent(slug)];
  if (root === 'pub') {
    // Keep the whole public id: /pub/jane/1/2/3 and /pub/jane/4/5/6 are different people.
    for (const seg of segments.slice(2, 5)) {
      if (!PUB_PART.test(seg)) break;
      parts.push(seg.toLowerCase());
    }
  }
  const path = '/' + parts.join('/');
  return { ok: true, identity: { path, url: `https://www.${domain}${path}` } };
}

function sameSite(hostname: string, domain: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (host === domain) return true;
  if (!host.endsWith('.' + domain)) return false;
  return SAME_SITE_SUB.test(host.slice(0, -domain.length - 1));
}

function decodeSlug(segment: string | undefined): string | null {
  if (segment === undefined) return null;
  let decoded: string;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    return null;
  }
  decoded = decoded.normalize('NFC');
  if (decoded.length === 0 || decoded.length > 200 || BAD_SLUG.test(decoded)) return null;
  if (decoded === '.' || decoded === '..') return null;
  // Lowercasing can denormalize (e.g. U+0130), so normalize again to stay idempotent.
  return MEMBER_ID.test(decoded) ? decoded : decoded.toLowerCase().normalize('NFC');
}
