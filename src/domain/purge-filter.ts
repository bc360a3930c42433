import { isEndpointName, type EndpointName } from './endpoints.js';
import { canonicalUrl } from './identity.js';
import { positiveId } from './params.js';

/** Which cache entries to delete; shared by the CLI and the admin API. */
export interface PurgeFilter {
  readonly identity?: string;
  readonly endpoint?: EndpointName;
  readonly all?: boolean;
}

export interface PurgeInput {
  /** A profile or company URL: purges every endpoint's entries for that entity. */
  url?: string;
  /** `param=value`, e.g. `org_id=42` or `person.id=7`. */
  id?: string;
  endpoint?: string;
  all?: boolean;
}

const ID_KIND: Record<string, 'profile' | 'company'> = {
  'person.id': 'profile',
  user_id: 'profile',
  profile_id: 'profile',
  'company.id': 'company',
  org_id: 'company',
};

/** Turn user input into a filter, or an error message; identities match parseLookup's. */
export function purgeFilter(input: PurgeInput, domain: string): PurgeFilter | string {
  const given = [input.url, input.id, input.all ? 'all' : undefined].filter((x) => x !== undefined).length;
  if (input.all && (input.url || input.id || input.endpoint)) return '--all cannot be combined with other filters';
  if (given > 1) return 'give one of url, id or all';
  let endpoint: EndpointName | undefined;
  if (input.endpoint !== undefined) {
    if (!isEndpointName(input.endpoint)) return `unknown endpoint '${input.endpoint}'`;
    endpoint = input.endpoint;
  }
  if (input.all) return { all: true };
  if (input.url !== undefined) {
    for (const kind of ['profile', 'company'] as const) {
      const r = canonicalUrl(input.url, kind, domain);
      if (r.ok) return { identity: `${kind}:url:${r.identity.path}`, endpoint };
    }
    return 'not a profile or company URL of the network';
  }
  if (input.id !== undefined) {
    const m = /^([a-z_.]+)=(.+)$/.exec(input.id);
    const kind = m ? ID_KIND[m[1]!] : undefined;
    const value = m ? positiveId(m[2]!) : null;
    if (!m || !kind || value === null) return `id must be <param>=<positive integer> with param one of ${Object.keys(ID_KIND).join(', ')}`;
    return { identity: `${kind}:${m[1]}:${value}`, endpoint };
  }
  if (endpoint) return { endpoint };
  return 'give one of url, id, endpoint or all';
}
