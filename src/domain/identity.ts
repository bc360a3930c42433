import type { EntityKind } from './endpoints.js';

/**
 * Canonical identity of an entity URL: the cache-key part that decides "same entity".
 * Serving one entity's data for another is the worst bug a cache can have here, so the
 * rules only merge spellings that are certainly the same page and never guess beyond that.
 */
export interface UrlIdentity {
  /** `/in/x`, `/pub/x/…` (every segment), `/company/x` or `/school/x`; segments percent-encoded. */
  readonly path: string;
  /** The URL forwarded to the provider: https://www.<domain><path>. */
  readonly url: string;
}

/** The network whose URLs are looked up when config network.domain is not set. */
export const DEFAULT_NETWORK_DOMAIN = 'linkedin.com';

export type UrlParse = { ok: true; identity: UrlIdentity } | { ok: false; reason: string };

const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;
/** Subdomains that are the same site: web, mobile, and country/language editions (de., uk., …). */
const SAME_SITE_SUB = /^(?:www|m|mobile|[a-z]{2}|[a-z]{2}-[a-z]{2})$/;
/** Member-id slugs are opaque base64-like tokens: their case is significant. */
const MEMBER_ID = /^AC[ow]AA/;
/** Characters that never belong in a decoded slug. */
const BAD_SLUG = /[\s/?#\\\u0000-\u001f\u007f]/u;
/**
 * Characters the URL parser would drop or rewrite before BAD_SLUG could see them (WHATWG URL
 * removes tabs and newlines anywhere and control characters at the ends, and reads `\` as `/`):
 * `/in/jane%0A-doe` would become jane-doe's page, which the provider takes for another member.
 */
const REWRITTEN_BY_PARSER = /[\u0000-\u001f\u007f\\]/u;
/**
 * A `.` or `..` path segment, also spelled with `%2e`, before any query or fragment. The URL
 * parser resolves it (`/in/alice/../bob` is bob's page to it) where the provider need not: it
 * reads alice's page with a sub-page after her slug, and a /pub/ path by all its segments. Which
 * member such a URL names is not certain, so it is refused rather than guessed.
 */
const DOT_SEGMENT = /\/(?:\.|%2e){1,2}(?=\/|$)/i;
const MAX_URL_CHARS = 2048;
/**
 * The longest canonical path (percent-encoded) that is keyed and forwarded. A longer one is
 * refused, never cut: a cut path names another page. One /in/ or /company/ slug (≤ 200
 * characters, ≤ 9 encoded each) always fits; only a /pub/ path with many segments can exceed it.
 */
const MAX_PATH_CHARS = 2048;

const ROOTS: Record<EntityKind, readonly string[]> = {
  profile: ['in', 'pub'],
  company: ['company', 'school'],
};

export function canonicalUrl(input: string, kind: EntityKind, domain: string): UrlParse {
  const raw = input.trim();
  if (raw.length === 0) return { ok: false, reason: 'empty' };
  if (raw.length > MAX_URL_CHARS) return { ok: false, reason: 'too long' };
  if (REWRITTEN_BY_PARSER.test(raw)) return { ok: false, reason: 'characters' };
  if (DOT_SEGMENT.test(raw.split(/[?#]/, 1)[0]!)) return { ok: false, reason: 'dot segment' };
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
  const slug = decodeSegment(segments[1]);
  if (slug === null) return { ok: false, reason: 'slug' };

  const folded = foldVanityCase(slug);
  if (folded === null) return { ok: false, reason: 'slug' };
  const parts = [root, encodeURIComponent(folded)];
  if (root === 'pub') {
    // A /pub/ path names its member by all of it (/pub/name/1a/2b/3c, /pub/dir/first/last) and
    // its segments have no fixed shape, so none can be told apart from a sub-page: every one is
    // kept, with its case, and forwarded. An unneeded split costs one provider call; a wrong
    // merge serves one person's data for another.
    for (const seg of segments.slice(2)) {
      const part = decodeSegment(seg);
      if (part === null) return { ok: false, reason: 'slug' };
      parts.push(encodeURIComponent(part));
    }
  }
  const path = '/' + parts.join('/');
  if (path.length > MAX_PATH_CHARS) return { ok: false, reason: 'too long' };
  return { ok: true, identity: { path, url: `https://www.${domain}${path}` } };
}

function sameSite(hostname: string, domain: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (host === domain) return true;
  if (!host.endsWith('.' + domain)) return false;
  return SAME_SITE_SUB.test(host.slice(0, -domain.length - 1));
}

/** One path segment percent-decoded and NFC-normalized, or null when no slug can hold it. */
function decodeSegment(segment: string | undefined): string | null {
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
  return decoded;
}

/**
 * Vanity slugs are case-insensitive; member-id slugs are opaque tokens whose case is significant.
 * Null for a slug whose lowercase is not NFC (`J\u030C` → `j\u030C`, which NFC composes to `ǰ`):
 * the provider reads NFC, then lowercase, so `J\u030C` and `ǰ` are two members to it, while any
 * URL forwarded for the first is normalized by it into the second. Normalizing again after the
 * fold (as Tollgate did) merged them: one member's data served for the other. Refused, not guessed.
 */
function foldVanityCase(slug: string): string | null {
  if (MEMBER_ID.test(slug)) return slug;
  const lower = slug.toLowerCase();
  return lower === lower.normalize('NFC') ? lower : null;
}
