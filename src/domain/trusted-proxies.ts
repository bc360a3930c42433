import { BlockList, isIP } from 'node:net';

/**
 * `server.trustedProxies`: the addresses whose X-Forwarded-For entries are believed. Kept
 * apart from the HTTP layer so that configuration can validate entries with the same parser.
 */
export interface TrustedProxies {
  /** Whether `address` (IPv4, IPv6 or IPv4-mapped IPv6) is a listed proxy. */
  has(address: string): boolean;
  readonly empty: boolean;
}

/** An IP or CIDR, IPv4 or IPv6 (e.g. `10.0.0.0/8`, `127.0.0.1`, `fd00::/8`); throws naming a bad entry. */
function addEntry(list: BlockList, entry: string): void {
  const slash = entry.indexOf('/');
  const address = slash < 0 ? entry : entry.slice(0, slash);
  const version = isIP(address);
  if (version === 0) throw new Error(`'${entry}' is not an IP address or CIDR range`);
  const type = version === 6 ? 'ipv6' : 'ipv4';
  if (slash < 0) return list.addAddress(address, type);
  const bits = entry.slice(slash + 1);
  const max = version === 6 ? 128 : 32;
  if (!/^[0-9]{1,3}$/.test(bits) || Number(bits) > max) throw new Error(`'${entry}' has a prefix length outside 0..${max}`);
  list.addSubnet(address, Number(bits), type);
}

export function trustedProxies(entries: readonly string[]): TrustedProxies {
  const list = new BlockList();
  for (const e of entries) addEntry(list, e);
  const empty = entries.length === 0;
  return {
    empty,
    has(address) {
      if (empty) return false;
      const v = isIP(address);
      return v !== 0 && list.check(address, v === 6 ? 'ipv6' : 'ipv4');
    },
  };
}
