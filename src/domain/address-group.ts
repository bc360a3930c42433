import { isIP } from 'node:net';
import { withoutPort } from './forwarded-address.js';

/**
 * The group of client addresses that the failed-authentication limiters count as one (README
 * "Request-rate limits"). An IPv4 address is its own group. An IPv6 address is its /64: a
 * single host or customer is routinely given a whole /64 and picks source addresses from it at
 * will, so counting per /128 would let one client make a fresh guess budget per address. An
 * IPv4-mapped IPv6 address (`::ffff:203.0.113.5`, what a dual-stack socket reports for an
 * IPv4 client) is the IPv4 address. A port after the address is dropped. Anything that is
 * not an IP (say, a proxy's `unknown`) is counted as written.
 */
export function addressGroup(address: string): string {
  // Every connection a new port: the port must not make a new counter.
  const host = withoutPort(address);
  const zone = host.indexOf('%');
  const bare = zone < 0 ? host : host.slice(0, zone);
  if (isIP(bare) === 4) return bare;
  if (isIP(bare) !== 6) return address;
  const groups = hextets(bare.toLowerCase());
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `${groups[6]! >> 8}.${groups[6]! & 255}.${groups[7]! >> 8}.${groups[7]! & 255}`;
  }
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a dotted IPv4 tail read as two). */
function hextets(ip: string): number[] {
  let text = ip;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, null];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const middle = tail === null ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...middle, ...right].map((g) => parseInt(g, 16));
}
