/**
 * The address in an X-Forwarded-For entry, without the port some proxies write after it
 * (Azure's Application Gateway, IIS ARR: `203.0.113.5:40001`, `[2001:db8::1]:443`): the port
 * is a connection's, not a host's, so neither the trusted-proxy check nor the failed-auth
 * counters may see it. An IPv6 address is taken out of its brackets; a bare one, whose colons
 * are its own, is returned whole (`2001:db8::1:443` is an address, not `2001:db8::1` port 443).
 * Anything else (a proxy's `unknown`, an obfuscated name) is returned as written.
 */
export function withoutPort(entry: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(entry);
  if (bracketed) return bracketed[1]!;
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(entry);
  return v4 ? v4[1]! : entry;
}
