/**
 * The provider's own query validation (spec §4). Deliberately lenient where the spec is
 * silent (unknown or repeated parameters, losing identifiers): Tollgate validates strictly
 * before calling, and a simulator stricter than the real provider would hide gateway bugs.
 */
import {
  FILTER_VALUES,
  SORT_FIELDS,
  SUMMARY_FILTER_VALUES,
  isStrategy,
  type EndpointDef,
  type EntityKind,
  type Strategy,
} from '../domain/endpoints.js';
import { failure, type Failure } from '../domain/errors.js';

/** The network's domain; the spec neutralises the brand, the simulator mimics the real one. */
export const NETWORK_DOMAIN = 'linkedin.com';

export interface Identity {
  /** The identifier parameter that won precedence. */
  readonly param: string;
  /** Canonical value: digit string for ids, `in/slug` style path for URLs. */
  readonly value: string;
  /** The vanity slug of a URL identifier, else null. */
  readonly slug: string | null;
  /** The URL's first path segment (`in`, `pub`, `company`, `school`), else null. */
  readonly section: string | null;
  /** Seed and cache-key part: distinct id spaces never collide. */
  readonly key: string;
}

export interface SimRequest {
  readonly endpoint: EndpointDef;
  readonly identity: Identity;
  readonly strategy: Strategy;
  readonly maxage: number | null;
  readonly experienceFilter: string;
  readonly educationFilter: string;
  readonly summaryFilter: string;
  readonly sortField: (typeof SORT_FIELDS)[number];
  readonly offset: number;
  readonly pageSize: number;
}

const SECTIONS: Record<EntityKind, readonly string[]> = {
  profile: ['in', 'pub'],
  company: ['company', 'school'],
};

/** Member-id slugs are opaque tokens: lowercasing them would name another member. */
const MEMBER_ID = /^AC[ow]AA/;

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export function parseNetworkUrl(raw: string, entity: EntityKind): Identity | null {
  let s = raw.trim();
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(s);
  if (scheme) {
    if (!/^https?$/i.test(scheme[1] ?? '')) return null;
    s = s.slice(scheme[0].length);
  }
  const cut = s.search(/[?#]/);
  if (cut >= 0) s = s.slice(0, cut);
  const slash = s.indexOf('/');
  if (slash < 0) return null;
  const host = s.slice(0, slash).toLowerCase().replace(/:\d+$/, '');
  if (host !== NETWORK_DOMAIN && !host.endsWith('.' + NETWORK_DOMAIN)) return null;
  const segs = s.slice(slash).split('/').filter(Boolean).map(safeDecode);
  const section = segs[0]?.toLowerCase();
  const rawSlug = segs[1]?.normalize('NFC');
  if (!section || !rawSlug || !SECTIONS[entity].includes(section)) return null;
  const slug = MEMBER_ID.test(rawSlug) ? rawSlug : rawSlug.toLowerCase();
  // A /pub/ path names one member by all of its segments; other sections by the slug alone.
  // NFC like the slug (DESIGN: a URL is read percent-decoded, then NFC): `e` + combining acute and `é` are one segment.
  const tail = section === 'pub' ? segs.slice(2).map((x) => '/' + x.normalize('NFC').toLowerCase()).join('') : '';
  const value = `${section}/${slug}${tail}`;
  return { param: 'url', value, slug, section, key: `url:${value}` };
}

/** ASCII digits, value > 0; leading zeros are dropped so `007` and `7` are one entity. */
export function parsePositiveInt(v: string): string | null {
  if (!/^\d{1,20}$/.test(v)) return null;
  const canonical = BigInt(v).toString();
  return canonical === '0' ? null : canonical;
}

function invalid(name: string, hint: string): Failure {
  return failure('INVALID_PARAMETER', `Invalid value for parameter "${name}": ${hint}.`);
}

function oneOf<T extends string>(q: URLSearchParams, name: string, allowed: readonly T[], def: T): T | Failure {
  const v = q.get(name);
  if (v === null) return def;
  return (allowed as readonly string[]).includes(v) ? (v as T) : invalid(name, `expected one of ${allowed.join(', ')}`);
}

function intParam(q: URLSearchParams, name: string, min: number, max: number, def: number): number | Failure {
  const v = q.get(name);
  if (v === null) return def;
  const n = /^\d{1,10}$/.test(v) ? Number(v) : NaN;
  return n >= min && n <= max ? n : invalid(name, `expected an integer from ${min} to ${max}`);
}

function identify(def: EndpointDef, q: URLSearchParams): Identity | Failure {
  const param = def.identifiers.find((p) => q.has(p));
  if (!param) {
    return failure('MISSING_PARAMETER', `One identifier is required: ${def.identifiers.join(', ')}.`);
  }
  const raw = q.get(param) ?? '';
  if (param === 'url') {
    const id = parseNetworkUrl(raw, def.entity);
    const what = def.entity === 'profile' ? 'profile' : 'company';
    return id ?? failure('INVALID_NETWORK_URL', `Please provide a valid ${what} URL.`);
  }
  const value = parsePositiveInt(raw);
  if (value === null) return invalid(param, 'expected a positive integer');
  return { param, value, slug: null, section: null, key: `${param}:${value}` };
}

export function parseRequest(def: EndpointDef, rawQuery: string): SimRequest | Failure {
  const q = new URLSearchParams(rawQuery);
  const identity = identify(def, q);
  if ('code' in identity) return identity;

  const strategyRaw = q.get('strategy') ?? 'cached';
  if (!isStrategy(strategyRaw) || !def.strategies.includes(strategyRaw)) {
    return invalid('strategy', `expected one of ${def.strategies.join(', ')}`);
  }
  const strategy: Strategy = strategyRaw;

  let maxage: number | null = null;
  const maxageRaw = def.posts ? null : q.get('maxage');
  if (maxageRaw !== null) {
    const v = parsePositiveInt(maxageRaw);
    if (v === null) return invalid('maxage', 'expected a positive integer (seconds)');
    maxage = Number(v);
  }
  if ((strategy === 'strict' || strategy === 'besteffort') && maxage === null) {
    return failure('MISSING_PARAMETER', `Parameter "maxage" is required with strategy=${strategy}.`);
  }

  const isProfile = def.name === 'profile';
  const experienceFilter = isProfile ? oneOf(q, 'experience_filter', FILTER_VALUES, 'default') : 'default';
  if (typeof experienceFilter !== 'string') return experienceFilter;
  const educationFilter = isProfile ? oneOf(q, 'education_filter', FILTER_VALUES, 'default') : 'default';
  if (typeof educationFilter !== 'string') return educationFilter;
  const summaryFilter = isProfile ? oneOf(q, 'summary_filter', SUMMARY_FILTER_VALUES, 'default') : 'default';
  if (typeof summaryFilter !== 'string') return summaryFilter;

  const sortField = def.posts ? oneOf(q, 'sort_field', SORT_FIELDS, 'id') : 'id';
  if (typeof sortField !== 'string') return sortField;
  // The spec shows no maximum; the gateway admits up to 1,000,000,000 (README), and so does this
  // model of the provider: at 999,999,999 it refused, after the call, what the gateway had admitted.
  const offset = def.posts ? intParam(q, 'offset', 0, 1_000_000_000, 0) : 0;
  if (typeof offset !== 'number') return offset;
  const pageSize = def.posts ? intParam(q, 'page_size', 1, 100, 10) : 10;
  if (typeof pageSize !== 'number') return pageSize;

  return {
    endpoint: def,
    identity,
    strategy,
    maxage,
    experienceFilter,
    educationFilter,
    summaryFilter,
    sortField,
    offset,
    pageSize,
  };
}
