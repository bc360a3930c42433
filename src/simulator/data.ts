/**
 * Synthetic profile and company data. Base records come from one seeded stream; filters are
 * applied afterwards with their own seed, so a filter changes only what it should and the
 * base entity stays identical whichever variant was asked for.
 */
import type { EntityKind } from '../domain/endpoints.js';
import type { Identity, SimRequest } from './params.js';
import * as V from './random.js';
import { hash32, rng, slugify, type Rng } from './random.js';

type Rec = Record<string, unknown> & { start_date: string; end_date: string | null; current: boolean };

export function seedOf(kind: EntityKind, identity: Identity, salt = ''): number {
  return hash32(`${kind}|${identity.key}${salt}`);
}

const ym = (m: number): string => `${Math.floor(m / 12)}-${String((m % 12) + 1).padStart(2, '0')}`;

/** Echo of the identifier used, one field per identifier parameter (`person.id` → `person_id`). */
export function echoIds(identifiers: readonly string[], identity: Identity): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const p of identifiers) {
    if (p !== 'url') out[p.replace('.', '_')] = identity.param === p ? identity.value : null;
  }
  return out;
}

function experience(r: Rng): Rec[] {
  const n = r.int(2, 6);
  let cursor = 2025 * 12 + r.int(0, 11);
  let company = `${r.pick(V.COMPANY_PREFIXES)} ${r.pick(V.COMPANY_SUFFIXES)}`;
  const out: Rec[] = [];
  for (let i = 0; i < n; i++) {
    // Some moves stay at the same company (promotions), which is what `distincts` collapses.
    if (i > 0 && !r.chance(0.35)) company = `${r.pick(V.COMPANY_PREFIXES)} ${r.pick(V.COMPANY_SUFFIXES)}`;
    const current = i === 0 || (i === 1 && r.chance(0.2));
    const start = cursor - r.int(6, 48);
    out.push({ title: r.pick(V.TITLES), company, start_date: ym(start), end_date: current ? null : ym(cursor), current });
    cursor = start - r.int(0, 6);
  }
  return out;
}

function education(r: Rng): Rec[] {
  const n = r.int(1, 3);
  let year = 2025 - r.int(0, 12);
  const out: Rec[] = [];
  for (let i = 0; i < n; i++) {
    const current = i === 0 && r.chance(0.15);
    const start = year - r.int(2, 5);
    out.push({
      school: r.pick(V.SCHOOLS),
      degree: r.pick(V.DEGREES),
      field_of_study: r.pick(V.FIELDS),
      start_date: `${start}-09`,
      end_date: current ? null : `${year}-06`,
      current,
    });
    year = start - r.int(0, 2);
  }
  return out;
}

/** The four filter shapes of spec §4.2, each visibly different from `default`. */
function applyFilter(recs: Rec[], filter: string, groupKey: string, seed: number): unknown[] {
  if (filter === 'current') return recs.filter((x) => x.current);
  if (filter === 'revisions') {
    const r = rng(seed);
    return recs.map((rec) => {
      const k = r.int(1, 3);
      const revisions = Array.from({ length: k }, (_, i) => ({
        revision: i + 1,
        recorded_at: `${2020 + i + r.int(0, 1)}-${String(r.int(1, 12)).padStart(2, '0')}-01`,
        ...rec,
      }));
      return { [groupKey]: rec[groupKey], current: rec.current, revisions };
    });
  }
  if (filter === 'distincts') {
    const groups = new Map<unknown, Rec[]>();
    for (const rec of recs) groups.set(rec[groupKey], [...(groups.get(rec[groupKey]) ?? []), rec]);
    return [...groups].map(([key, items]) => ({
      [groupKey]: key,
      records: items.length,
      start_date: items.map((x) => x.start_date).sort()[0],
      end_date: items.some((x) => x.current) ? null : items.map((x) => x.end_date ?? '').sort().at(-1),
      current: items.some((x) => x.current),
    }));
  }
  return recs;
}

function sentences(r: Rng, n: number): string[] {
  return Array.from({ length: n }, () => {
    const w = r.some(V.WORDS, r.int(5, 9)).join(' ');
    return w.charAt(0).toUpperCase() + w.slice(1) + '.';
  });
}

export function profileData(req: SimRequest): Record<string, unknown> {
  const seed = seedOf('profile', req.identity);
  const r = rng(seed);
  const first = r.pick(V.FIRST_NAMES);
  const last = r.pick(V.LAST_NAMES);
  const exp = experience(r);
  const edu = education(r);
  const city = r.pick(V.CITIES);
  const location = r.chance(0.1) ? null : `${city[0]}, ${city[1]}`;
  const summary = sentences(r, 4);
  const now = exp[0];
  return {
    public_identifier: req.identity.slug,
    ...echoIds(req.endpoint.identifiers, req.identity),
    first_name: first,
    last_name: last,
    headline: now ? `${String(now.title)} at ${String(now.company)}` : null,
    location,
    // The standard summary is the truncated teaser; `last_complete` is the full text.
    summary: req.summaryFilter === 'last_complete' ? summary.join(' ') : `${summary[0] ?? ''} …`,
    connections_count: r.int(0, 500),
    experience: applyFilter(exp, req.experienceFilter, 'company', seedOf('profile', req.identity, '|exp')),
    education: applyFilter(edu, req.educationFilter, 'school', seedOf('profile', req.identity, '|edu')),
  };
}

/** The URL slug, or for id lookups one derived from the name (every organisation has one). */
export function universalName(identity: Identity): string {
  if (identity.slug !== null) return identity.slug;
  const r = rng(seedOf('company', identity));
  return `${slugify(`${r.pick(V.COMPANY_PREFIXES)} ${r.pick(V.COMPANY_SUFFIXES)}`)}-${identity.value.slice(-4)}`;
}

export function companyData(req: SimRequest): Record<string, unknown> {
  const r = rng(seedOf('company', req.identity));
  const name = `${r.pick(V.COMPANY_PREFIXES)} ${r.pick(V.COMPANY_SUFFIXES)}`;
  const universal = universalName(req.identity);
  const section = req.identity.section ?? 'company';
  const cities = r.some(V.CITIES, r.int(1, 4));
  return {
    ...echoIds(req.endpoint.identifiers, req.identity),
    universal_name: universal,
    name,
    linkedin_url: `https://www.linkedin.com/${section}/${universal}/`,
    industry: r.pick(V.INDUSTRIES),
    website: `https://www.${slugify(name)}.example`,
    // Log-uniform: most organisations are small, a few are huge.
    employee_count: Math.round(Math.exp(r.next() * Math.log(100_000))),
    founded_year: r.int(1950, 2023),
    locations: cities.map(([c, country], i) => ({ city: c, country, headquarters: i === 0 })),
    specialties: r.some(V.SPECIALTIES, r.int(2, 5)),
    description: sentences(r, 2).join(' '),
  };
}
