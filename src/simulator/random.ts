/**
 * Seeded randomness and vocabulary for synthetic data. Everything the simulator invents is
 * a pure function of a string seed, so the same lookup always yields the same entity, across
 * processes and runs, without storing anything.
 */

/** FNV-1a, 32 bit: tiny, stable across platforms, good enough to spread seeds. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  chance(p: number): boolean;
  /** `n` distinct items (fewer if the list is shorter). */
  some<T>(items: readonly T[], n: number): T[];
}

/** mulberry32: a 32-bit state is plenty for fake data and keeps generation fast. */
export function rng(seed: number): Rng {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(items: readonly T[]): T => items[int(0, items.length - 1)] as T;
  const some = <T>(items: readonly T[], n: number): T[] => {
    const pool = [...items];
    const out: T[] = [];
    while (out.length < n && pool.length > 0) out.push(pool.splice(int(0, pool.length - 1), 1)[0] as T);
    return out;
  };
  return { next, int, pick, chance: (p) => next() < p, some };
}

export function slugify(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

export const FIRST_NAMES = [
  'Ada', 'Ben', 'Chloé', 'Dmitri', 'Elif', 'Farah', 'Gustavo', 'Hana', 'Ines', 'Jonas', 'Kwame',
  'Lena', 'Mateo', 'Nora', 'Oskar', 'Priya', 'Quentin', 'Rosa', 'Sven', 'Tariq', 'Uma', 'Viktor',
  'Wen', 'Ximena', 'Yusuf', 'Zoë',
] as const;

export const LAST_NAMES = [
  'Abara', 'Becker', 'Castillo', 'Dubois', 'Eriksen', 'Fischer', 'García', 'Haddad', 'Ivanova',
  'Jansen', 'Kowalski', 'Lindqvist', 'Moreau', 'Nakamura', 'Okafor', 'Petrov', 'Rossi', 'Schmidt',
  'Tanaka', 'Usman', 'Varga', 'Wójcik', 'Yilmaz', 'Zhang',
] as const;

export const TITLES = [
  'Software Engineer', 'Senior Software Engineer', 'Staff Engineer', 'Engineering Manager',
  'Product Manager', 'Data Scientist', 'UX Designer', 'Site Reliability Engineer',
  'Solutions Architect', 'Marketing Lead', 'Sales Director', 'Head of Operations', 'CTO',
  'Research Scientist', 'Technical Writer', 'Financial Analyst',
] as const;

export const COMPANY_PREFIXES = [
  'Northwind', 'Bluepeak', 'Cobalt', 'Driftwood', 'Evergreen', 'Foxglove', 'Granite', 'Harbor',
  'Ironbark', 'Juniper', 'Keystone', 'Lumen', 'Meridian', 'Nimbus', 'Orchard', 'Pinecrest',
] as const;

export const COMPANY_SUFFIXES = [
  'Analytics', 'Robotics', 'Labs', 'Systems', 'Health', 'Logistics', 'Energy', 'Studios',
  'Networks', 'Foods', 'Capital', 'Software',
] as const;

export const CITIES: readonly (readonly [string, string])[] = [
  ['Berlin', 'DE'], ['Lisbon', 'PT'], ['Toronto', 'CA'], ['Austin', 'US'], ['Nairobi', 'KE'],
  ['Singapore', 'SG'], ['São Paulo', 'BR'], ['Warsaw', 'PL'], ['Seoul', 'KR'], ['Dublin', 'IE'],
  ['Melbourne', 'AU'], ['Stockholm', 'SE'],
];

export const SCHOOLS = [
  'Technical University of Lisbon', 'University of Toronto', 'ETH Zürich', 'KTH Royal Institute',
  'University of Nairobi', 'National University of Singapore', 'Trinity College Dublin',
  'University of Warsaw', 'Seoul National University', 'University of Texas at Austin',
] as const;

export const DEGREES = ['BSc', 'BA', 'MSc', 'MBA', 'PhD', 'MEng'] as const;

export const FIELDS = [
  'Computer Science', 'Economics', 'Mechanical Engineering', 'Mathematics', 'Design',
  'Physics', 'Business Administration', 'Linguistics',
] as const;

export const INDUSTRIES = [
  'Software Development', 'Hospital & Health Care', 'Logistics & Supply Chain', 'Renewable Energy',
  'Financial Services', 'Food Production', 'Higher Education', 'Media Production',
] as const;

export const SPECIALTIES = [
  'Machine Learning', 'Cloud Infrastructure', 'Data Engineering', 'Supply Chain Optimisation',
  'Solar Power', 'Mobile Apps', 'Payments', 'Computer Vision', 'Developer Tools', 'Security',
  'Customer Success', 'Embedded Systems',
] as const;

export const WORDS = [
  'shipping', 'hiring', 'excited', 'team', 'launch', 'lessons', 'learned', 'customers', 'data',
  'platform', 'conference', 'thanks', 'growth', 'open', 'source', 'milestone', 'roadmap', 'today',
  'proud', 'new', 'role', 'insights', 'scaling', 'reliability', 'community', 'keynote',
] as const;
