import { withoutPort } from '../domain/forwarded-address.js';
import type { TrustedProxies } from '../domain/trusted-proxies.js';

/**
 * The client address behind proxies (DESIGN §6), one rule for both HTTP planes (the control
 * plane reads it as `request.clientIp`, never Fastify's `request.ip`) and for the refusals on
 * the raw socket: the right-most address not in `server.trustedProxies`, walking from the
 * socket's peer leftwards through X-Forwarded-For. Every entry right of that address was
 * appended by a proxy the operator listed, so the client cannot choose it; everything further
 * left it can.
 */

export { trustedProxies, type TrustedProxies } from '../domain/trusted-proxies.js';

/**
 * The client's address. X-Forwarded-For is read only when the peer itself is a trusted
 * proxy; each hop then vouches for the entry left of it. Entries are split on commas and
 * trimmed of spaces and tabs, as Fastify's proxy-addr does (a test holds the two equal).
 * An entry is checked against the list by its address alone (`10.0.0.5:443`, `[fd00::5]:443`),
 * which proxy-addr does not do; it is returned as written (addressGroup drops a client's port).
 * When every hop is trusted, the left-most entry is the client.
 */
export function clientIp(peer: string | undefined, xff: string | string[] | undefined, trusted: TrustedProxies): string {
  const socketAddr = peer ?? '';
  if (trusted.empty || typeof xff !== 'string' || !trusted.has(socketAddr)) return socketAddr;
  // One entry is trimmed of any whitespace, a list only of spaces and tabs: proxy-addr's rule.
  if (!xff.includes(',')) {
    const only = xff.trim();
    return only === '' ? socketAddr : only;
  }
  let candidate = socketAddr;
  let end = xff.length;
  while (end > 0) {
    const comma = xff.lastIndexOf(',', end - 1);
    const entry = trimSpaces(xff.slice(comma + 1, end));
    end = comma < 0 ? 0 : comma;
    if (entry === '') continue;
    candidate = entry;
    // A proxy may write itself with its connection's port: it is listed by its address.
    if (!trusted.has(withoutPort(entry))) return entry;
  }
  return candidate;
}

function trimSpaces(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s[a] === ' ' || s[a] === '\t')) a++;
  while (b > a && (s[b - 1] === ' ' || s[b - 1] === '\t')) b--;
  return s.slice(a, b);
}
