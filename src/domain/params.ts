import {
  FILTER_VALUES,
  SORT_FIELDS,
  SUMMARY_FILTER_VALUES,
  type EndpointDef,
  type Strategy,
  isStrategy,
} from './endpoints.js';
import { failure, type Failure } from './errors.js';
import { canonicalUrl } from './identity.js';

/** A validated lookup: the only shape later stages see (DESIGN §3). */
export interface LookupRequest {
  readonly endpoint: EndpointDef;
  /** The winning identifier by precedence, canonical. */
  readonly identifier: { readonly param: string; readonly value: string };
  /** Endpoint-independent entity identity, e.g. `profile:url:/in/jane` or `company:org_id:42`. */
  readonly identity: string;
  readonly strategy: Strategy;
  /** Seconds; only set for strict/besteffort (ignored otherwise, per DESIGN §3). */
  readonly maxage: number | null;
  /** Variant parameters with defaults filled in, in a fixed order: part of the cache key. */
  readonly variants: ReadonlyArray<readonly [string, string]>;
}

const MAX_MAXAGE_S = 10 * 365 * 24 * 3600;
const MAX_OFFSET = 1_000_000_000;
const MAX_ID_DIGITS = 20;

type Enum = readonly string[];
interface VariantSpec {
  readonly name: string;
  readonly def: string;
  readonly parse: (v: string) => string | null;
}

const enumOf = (values: Enum) => (v: string) => (values.includes(v) ? v : null);
const PROFILE_VARIANTS: readonly VariantSpec[] = [
  { name: 'experience_filter', def: 'default', parse: enumOf(FILTER_VALUES) },
  { name: 'education_filter', def: 'default', parse: enumOf(FILTER_VALUES) },
  { name: 'summary_filter', def: 'default', parse: enumOf(SUMMARY_FILTER_VALUES) },
];
const POSTS_VARIANTS: readonly VariantSpec[] = [
  { name: 'sort_field', def: 'id', parse: enumOf(SORT_FIELDS) },
  { name: 'offset', def: '0', parse: (v) => boundedInt(v, 0, MAX_OFFSET) },
  { name: 'page_size', def: '10', parse: (v) => boundedInt(v, 1, 100) },
];

function variantsOf(def: EndpointDef): readonly VariantSpec[] {
  if (def.posts) return POSTS_VARIANTS;
  return def.name === 'profile' ? PROFILE_VARIANTS : [];
}

/** Parameters an endpoint accepts; anything else would silently split or poison the cache. */
export function allowedParams(def: EndpointDef): readonly string[] {
  const extra = def.posts ? [] : ['maxage'];
  return [...def.identifiers, 'strategy', ...extra, ...variantsOf(def).map((v) => v.name)];
}

/** ASCII digits only, > 0, canonical (no leading zeros), at most 20 digits. */
export function positiveId(v: string): string | null {
  if (v.length === 0 || v.length > 64 || !/^[0-9]+$/.test(v)) return null;
  const canon = v.replace(/^0+/, '');
  if (canon.length === 0 || canon.length > MAX_ID_DIGITS) return null;
  return canon;
}

/**
 * Whether a query's (or form's) percent-escapes decode as UTF-8. URLSearchParams turns bytes
 * that do not (an overlong sequence, a lone byte, a surrogate) into U+FFFD, and a `url` holding
 * them was looked up, and charged, as another URL. A `%` that escapes nothing stays literal, as there.
 */
export function utf8Escapes(rawQuery: string): boolean {
  if (!rawQuery.includes('%')) return true;
  try {
    decodeURIComponent(rawQuery.replace(/%(?![0-9a-fA-F]{2})/g, '%25'));
    return true;
  } catch {
    return false;
  }
}

/** What a query whose percent-escapes are not UTF-8 is refused with (the lookups' and the admin API's). */
export const NOT_UTF8_QUERY = 'The query string has percent-escapes that are not UTF-8.';

/** The refusal of a query whose escapes are not UTF-8: in `url`, the invalid-URL code that parameter's errors have. */
function notUtf8(def: EndpointDef, rawQuery: string): Failure | null {
  if (utf8Escapes(rawQuery)) return null;
  for (const piece of rawQuery.split('&')) {
    if (utf8Escapes(piece)) continue;
    if (piece.startsWith('url=')) return invalidUrl(def);
    break;
  }
  return failure('INVALID_PARAMETER', NOT_UTF8_QUERY);
}

function invalidUrl(def: EndpointDef): Failure {
  return failure('INVALID_NETWORK_URL', `Please provide a valid ${def.entity === 'profile' ? 'profile' : 'company'} URL.`);
}

function boundedInt(v: string, min: number, max: number): string | null {
  if (v.length === 0 || v.length > 12 || !/^[0-9]+$/.test(v)) return null;
  const n = Number(v);
  return n >= min && n <= max ? String(n) : null;
}

function invalid(name: string, expected: string): Failure {
  return failure('INVALID_PARAMETER', `Invalid value for parameter '${name}': expected ${expected}.`);
}

/**
 * Parse a raw query string (without '?') for one endpoint. Pure; never throws.
 * Every given parameter is validated, even an identifier that precedence ignores.
 */
export function parseLookup(def: EndpointDef, rawQuery: string, domain: string): LookupRequest | Failure {
  const badBytes = notUtf8(def, rawQuery);
  if (badBytes) return badBytes;
  const allowed = allowedParams(def);
  const given = new Map<string, string>();
  for (const [name, value] of new URLSearchParams(rawQuery)) {
    if (!allowed.includes(name)) {
      return failure('UNKNOWN_PARAMETER', `Unknown parameter '${clip(name)}'. Accepted: ${allowed.join(', ')}.`);
    }
    if (given.has(name)) return failure('INVALID_PARAMETER', `Parameter '${name}' was given more than once.`);
    given.set(name, value);
  }

  let identifier: { param: string; value: string } | null = null;
  let identity = '';
  for (const param of def.identifiers) {
    const value = given.get(param);
    if (value === undefined) continue;
    let canon: string;
    let key: string;
    if (param === 'url') {
      const parsed = canonicalUrl(value, def.entity, domain);
      if (!parsed.ok) {
        return invalidUrl(def);
      }
      canon = parsed.identity.url;
      key = parsed.identity.path;
    } else {
      const id = positiveId(value);
      if (id === null) return invalid(param, 'a positive integer');
      canon = key = id;
    }
    if (identifier === null) {
      identifier = { param, value: canon };
      identity = `${def.entity}:${param}:${key}`;
    }
  }

  const rawStrategy = given.get('strategy') ?? 'cached';
  if (!isStrategy(rawStrategy) || !def.strategies.includes(rawStrategy)) {
    return invalid('strategy', `one of ${def.strategies.join(', ')}`);
  }
  let maxage: number | null = null;
  const rawMaxage = given.get('maxage');
  if (rawMaxage !== undefined) {
    const m = boundedInt(rawMaxage, 1, MAX_MAXAGE_S);
    if (m === null) return invalid('maxage', `a positive integer number of seconds up to ${MAX_MAXAGE_S}`);
    if (rawStrategy === 'strict' || rawStrategy === 'besteffort') maxage = Number(m);
  }

  const variants: Array<readonly [string, string]> = [];
  for (const spec of variantsOf(def)) {
    const raw = given.get(spec.name);
    const value = raw === undefined ? spec.def : spec.parse(raw);
    if (value === null) return invalid(spec.name, describe(spec.name));
    variants.push([spec.name, value]);
  }

  if (identifier === null) {
    return failure('MISSING_PARAMETER', `Missing identifier: give one of ${def.identifiers.join(', ')}.`);
  }
  if ((rawStrategy === 'strict' || rawStrategy === 'besteffort') && maxage === null) {
    return failure('MISSING_PARAMETER', `Strategy '${rawStrategy}' needs the 'maxage' parameter (seconds).`);
  }
  return { endpoint: def, identifier, identity, strategy: rawStrategy, maxage, variants };
}

function describe(name: string): string {
  switch (name) {
    case 'offset':
      return `an integer from 0 to ${MAX_OFFSET}`;
    case 'page_size':
      return 'an integer from 1 to 100';
    case 'sort_field':
      return SORT_FIELDS.join(' or ');
    case 'summary_filter':
      return SUMMARY_FILTER_VALUES.join(' or ');
    default:
      return `one of ${FILTER_VALUES.join(', ')}`;
  }
}

/** Echo at most a short, printable piece of caller input in messages. */
function clip(s: string): string {
  const printable = s.replace(/[^\x20-\x7e]/g, '?');
  return printable.length > 64 ? printable.slice(0, 64) + '…' : printable;
}

/** The cache key: endpoint + canonical identity + variants (DESIGN §4). */
export function cacheKey(req: LookupRequest): string {
  let key = `${req.endpoint.name}|${req.identity}`;
  for (const [k, v] of req.variants) key += `|${k}=${v}`;
  return key;
}

/**
 * The provider query for a request: the winning identifier only, the strategy to use
 * upstream, and variants that differ from their defaults, in a fixed order so that equal
 * requests make byte-identical provider calls.
 */
export function upstreamQuery(req: LookupRequest, strategy: Strategy, maxage: number | null): Array<[string, string]> {
  const q: Array<[string, string]> = [[req.identifier.param, req.identifier.value]];
  q.push(['strategy', strategy]);
  if (maxage !== null && (strategy === 'strict' || strategy === 'besteffort')) q.push(['maxage', String(maxage)]);
  const specs = variantsOf(req.endpoint);
  req.variants.forEach(([k, v], i) => {
    if (specs[i]?.def !== v) q.push([k, v]);
  });
  return q;
}
