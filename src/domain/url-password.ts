/**
 * A connection URL's password, for whatever shows the URL (config check, the startup log line,
 * a command's stderr): the user part's, and a `password` query parameter's, which libpq and
 * node-postgres take in its place (masked in a Redis URL too: it is the same mistake there).
 */

/** `url` with each password replaced by `mask`, or dropped when `mask` is ''; unchanged without one. Throws as new URL does. */
export function maskPasswords(url: string, mask: string): string {
  const u = new URL(url);
  const inQuery = u.searchParams.has('password');
  if (u.password === '' && !inQuery) return url;
  if (u.password !== '') u.password = mask;
  if (inQuery && mask === '') u.searchParams.delete('password');
  else if (inQuery) u.searchParams.set('password', mask);
  return u.href;
}
