/**
 * The provider's four lookups as data (spec §4). Everything else — parsing, access scopes,
 * cache keys, metrics labels — reads this table instead of repeating endpoint knowledge.
 */
export type EndpointName = 'profile' | 'profile_posts' | 'company' | 'company_posts';
export type Strategy = 'cached' | 'fetch' | 'strict' | 'besteffort';
export type EntityKind = 'profile' | 'company';

export const STRATEGIES: readonly Strategy[] = ['cached', 'fetch', 'strict', 'besteffort'];
export const FILTER_VALUES = ['default', 'current', 'revisions', 'distincts'] as const;
export const SUMMARY_FILTER_VALUES = ['default', 'last_complete'] as const;
export const SORT_FIELDS = ['id', 'post_date'] as const;

export interface EndpointDef {
  readonly name: EndpointName;
  readonly path: string;
  /** Which kind of URL the `url` identifier must be. */
  readonly entity: EntityKind;
  /** Identifier parameters in precedence order (spec §4.1 rule 1). */
  readonly identifiers: readonly string[];
  readonly strategies: readonly Strategy[];
  readonly posts: boolean;
}

export const ENDPOINTS: readonly EndpointDef[] = [
  {
    name: 'profile',
    path: '/v1/profile',
    entity: 'profile',
    identifiers: ['url', 'person.id', 'user_id', 'profile_id'],
    strategies: STRATEGIES,
    posts: false,
  },
  {
    name: 'profile_posts',
    path: '/v1/profile/posts',
    entity: 'profile',
    identifiers: ['url', 'person.id', 'profile_id'],
    strategies: ['cached', 'fetch'],
    posts: true,
  },
  {
    name: 'company',
    path: '/v1/company',
    entity: 'company',
    identifiers: ['url', 'company.id', 'org_id'],
    strategies: STRATEGIES,
    posts: false,
  },
  {
    name: 'company_posts',
    path: '/v1/company/posts',
    entity: 'company',
    identifiers: ['url', 'company.id', 'org_id'],
    strategies: ['cached', 'fetch'],
    posts: true,
  },
];

export const ENDPOINT_NAMES: readonly EndpointName[] = ENDPOINTS.map((e) => e.name);

const byPath = new Map(ENDPOINTS.map((e) => [e.path, e]));
const byName = new Map(ENDPOINTS.map((e) => [e.name, e]));

export function endpointByPath(path: string): EndpointDef | undefined {
  return byPath.get(path);
}

export function endpointByName(name: EndpointName): EndpointDef {
  const def = byName.get(name);
  if (!def) throw new Error(`unknown endpoint ${name}`);
  return def;
}

export function isEndpointName(s: string): s is EndpointName {
  return byName.has(s as EndpointName);
}

export function isStrategy(s: string): s is Strategy {
  return (STRATEGIES as readonly string[]).includes(s);
}
