/**
 * Which request paths may be proxied with the shared provider key. Servers and proxies
 * between us and the provider disagree on paths (Tomcat drops `;params` so `..;` is `..`,
 * some decode twice so `%252e` is `.`, some treat `\` as `/`, some apply Unicode NFKC so
 * `%E2%80%A5` is `..`), so anything that could mean a different path to any of them is
 * refused rather than interpreted: a path is allowed only if every reading of it is itself.
 */

import { ENDPOINTS } from './endpoints.js';

/** Literal characters allowed in a segment: RFC 3986 pchar without `;` and without `%`. */
const LITERAL = /^[A-Za-z0-9._~!$&'()*+,=:@-]$/;
/** Percent-encodings allowed: bytes of non-ASCII UTF-8 only. An ASCII character has no reason to be encoded. */
const ENCODED_BYTE = /^%[89A-Fa-f][0-9A-Fa-f]$/;

/**
 * The lookup endpoints, as a provider's router may match them: case folded, trailing slashes
 * dropped. Their spellings that miss the exact lookup route (`/v1/profile/`, `/V1/Profile`)
 * must not reach the provider through pass-through: that would skip the key's endpoint and
 * strategy scopes, the cache and the lookup's credit estimate.
 */
const LOOKUP_PATHS = new Set(ENDPOINTS.map((d) => d.path.toLowerCase()));

/** Whether `path` is one of the configured pass-through paths (a trailing `*` is a prefix). */
export function passthroughAllowed(path: string, patterns: readonly string[]): boolean {
  if (!unambiguous(path)) return false;
  if (LOOKUP_PATHS.has(path.toLowerCase().replace(/\/+$/, ''))) return false;
  return patterns.some((p) => (p.endsWith('*') ? path.startsWith(p.slice(0, -1)) : path === p));
}

function unambiguous(path: string): boolean {
  if (!path.startsWith('/')) return false;
  for (let i = 0; i < path.length; ) {
    if (path[i] === '/' || LITERAL.test(path[i]!)) i++;
    else if (ENCODED_BYTE.test(path.slice(i, i + 3))) i += 3;
    else return false;
  }
  let decoded: string;
  try {
    decoded = decodeURIComponent(path); // also refuses overlong or broken UTF-8 (`%C0%AE` is no `.`)
  } catch {
    return false;
  }
  // Compatibility characters (fullwidth `／`, `．`, one-dot leaders) become ASCII under NFKC.
  if (decoded.normalize('NFKC') !== decoded) return false;
  const segments = decoded.split('/').slice(1);
  // A trailing slash (empty last segment) is fine; empty or dot segments elsewhere are not.
  return segments.every((s, i) => s !== '.' && s !== '..' && (s !== '' || i === segments.length - 1));
}
