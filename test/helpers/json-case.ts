/**
 * README "Command line": every JSON key Tollgate prints (CLI --json, admin API bodies) is
 * snake_case, like the provider API's. The paths of the keys that are not, e.g. `$.hitRatio`;
 * keys that are data rather than names (an endpoint, a date) are snake_case or digits too.
 */
export function nonSnakeKeys(value: unknown, path = '$'): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => nonSnakeKeys(v, `${path}[${i}]`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => [...(/^[a-z0-9]+(_[a-z0-9]+)*$/.test(k) ? [] : [`${path}.${k}`]), ...nonSnakeKeys(v, `${path}.${k}`)]);
}
