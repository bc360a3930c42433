/**
 * One validated lookup against the simulator's own cache (spec §4.6). The provider keeps its
 * own cache, independent of Tollgate's, so `cached` answers cheaply only for entities some
 * earlier request fetched — which is what makes credit accounting in the gateway testable.
 */
import type { EndpointName } from '../domain/endpoints.js';
import { failure, type Failure } from '../domain/errors.js';
import type { Clock } from '../domain/clock.js';
import { companyData, echoIds, profileData, universalName } from './data.js';
import type { Identity, SimRequest } from './params.js';
import { allPosts, pagePosts, type Pagination } from './posts.js';

export const SOURCE = 'network';

export interface Meta {
  source: string;
  cached: boolean;
  credits_used: number;
  pagination?: Pagination;
}

export type LookupOutcome =
  | { ok: true; data: Record<string, unknown>; meta: Meta }
  | { ok: false; failure: Failure };

interface Entry {
  data: Record<string, unknown>;
  pagination?: Pagination;
  storedAt: number;
}

export class SimCache {
  private readonly entries = new Map<string, Entry>();
  get(key: string): Entry | undefined {
    return this.entries.get(key);
  }
  set(key: string, e: Entry): void {
    this.entries.set(key, e);
  }
  clear(): void {
    this.entries.clear();
  }
  get size(): number {
    return this.entries.size;
  }
}

export interface LookupDeps {
  cache: SimCache;
  clock: Clock;
  credits: { cached: number; fresh: Record<EndpointName, number> };
  /** Consulted only when a besteffort request needs a fresh fetch: an injected 512 source failure. */
  sourceFailure(): Failure | undefined;
}

/** Identities reserved for error paths, so tests need no fault injection for them. */
export function specialFailure(id: Identity): Failure | undefined {
  const notFound = failure('NOT_FOUND', 'The requested profile or organization was not found.');
  const gone = failure('SOURCE_NOT_FOUND', 'The source was deleted or moved.');
  if (id.slug !== null) {
    const slug = id.slug.toLowerCase();
    if (slug.startsWith('missing-')) return notFound;
    if (slug.startsWith('gone-')) return gone;
    return undefined;
  }
  if (id.value.endsWith('404')) return notFound;
  if (id.value.endsWith('513')) return gone;
  return undefined;
}

/** Endpoint + identity + the parameters that change the answer. */
export function cacheKey(req: SimRequest): string {
  const base = `${req.endpoint.name}|${req.identity.key}`;
  if (req.endpoint.posts) return `${base}|${req.sortField}|${req.offset}|${req.pageSize}`;
  if (req.endpoint.name === 'profile') {
    return `${base}|${req.experienceFilter}|${req.educationFilter}|${req.summaryFilter}`;
  }
  return base;
}

function build(req: SimRequest): Omit<Entry, 'storedAt'> {
  const def = req.endpoint;
  if (!def.posts) return { data: def.name === 'profile' ? profileData(req) : companyData(req) };
  const page = pagePosts(allPosts(def.entity, req.identity), req.sortField, req.offset, req.pageSize);
  const echo = echoIds(def.identifiers, req.identity);
  const named = def.entity === 'profile' ? { public_identifier: req.identity.slug } : { universal_name: universalName(req.identity) };
  return { data: { ...named, ...echo, posts: page.posts }, pagination: page.pagination };
}

export function lookup(req: SimRequest, deps: LookupDeps): LookupOutcome {
  const special = specialFailure(req.identity);
  if (special) return { ok: false, failure: special };

  const key = cacheKey(req);
  const entry = deps.cache.get(key);
  const now = deps.clock.now();
  const answer = (e: Omit<Entry, 'storedAt'>, cached: boolean): LookupOutcome => {
    const credits = cached ? deps.credits.cached : deps.credits.fresh[req.endpoint.name];
    const meta: Meta = { source: SOURCE, cached, credits_used: credits };
    if (e.pagination) meta.pagination = e.pagination;
    return { ok: true, data: e.data, meta };
  };
  const fresh = (): LookupOutcome => {
    const built = build(req);
    deps.cache.set(key, { ...built, storedAt: now });
    return answer(built, false);
  };
  const young = entry !== undefined && req.maxage !== null && now - entry.storedAt <= req.maxage * 1000;

  switch (req.strategy) {
    case 'cached':
      return entry ? answer(entry, true) : fresh();
    case 'fetch':
      return fresh();
    case 'strict':
      return entry && young ? answer(entry, true) : fresh();
    case 'besteffort': {
      if (entry && young) return answer(entry, true);
      const failed = deps.sourceFailure();
      if (!failed) return fresh();
      return entry ? answer(entry, true) : { ok: false, failure: failed };
    }
  }
}
