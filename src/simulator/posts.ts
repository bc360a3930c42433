/**
 * Synthetic posts and the provider's paging (spec §4.7).
 *
 * Order: `sort_field=id` is id DESCENDING (ids are fixed-width digit strings, so string order
 * is numeric order); `sort_field=post_date` is newest first, ties broken by id descending.
 * Ids are random rather than time-ordered so the two sort fields give visibly different pages.
 */
import type { EntityKind } from '../domain/endpoints.js';
import { seedOf } from './data.js';
import type { Identity } from './params.js';
import { WORDS, rng } from './random.js';

export interface Post {
  id: string;
  post_date: string;
  text: string;
  reactions_count: number;
  comments_count: number;
}

export interface Pagination {
  offset: number;
  page_size: number;
  next_offset: number | null;
  has_more: boolean;
}

/** A fixed instant rather than the clock: data must not drift between runs. */
const NEWEST_POST_AT = Date.UTC(2025, 11, 31, 18, 0, 0);
export const MAX_POSTS = 60;

/** 0..60, from the entity's hash: about half of all entities have more than 25 posts. */
export function postCount(kind: EntityKind, identity: Identity): number {
  return seedOf(kind, identity, '|posts') % (MAX_POSTS + 1);
}

/** All posts of an entity, newest first. */
export function allPosts(kind: EntityKind, identity: Identity): Post[] {
  const n = postCount(kind, identity);
  const r = rng(seedOf(kind, identity, '|post-data'));
  const seen = new Set<string>();
  const out: Post[] = [];
  let at = NEWEST_POST_AT - r.int(0, 72) * 3_600_000;
  for (let i = 0; i < n; i++) {
    let id: string;
    do {
      id = '7' + String(r.int(0, 999_999_999)).padStart(9, '0') + String(r.int(0, 999_999_999)).padStart(9, '0');
    } while (seen.has(id));
    seen.add(id);
    const words = Array.from({ length: r.int(6, 24) }, () => r.pick(WORDS)).join(' ');
    out.push({
      id,
      post_date: new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      text: words.charAt(0).toUpperCase() + words.slice(1) + '.',
      reactions_count: r.int(0, 2_000),
      comments_count: r.int(0, 150),
    });
    // Strictly decreasing dates (at least a minute apart) keep the date order total.
    at -= 60_000 + r.int(0, 20 * 24 * 60) * 60_000;
  }
  return out;
}

const byIdDesc = (a: Post, b: Post): number => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

export function sortPosts(posts: Post[], field: 'id' | 'post_date'): Post[] {
  const sorted = [...posts];
  if (field === 'id') return sorted.sort(byIdDesc);
  return sorted.sort((a, b) => (a.post_date < b.post_date ? 1 : a.post_date > b.post_date ? -1 : byIdDesc(a, b)));
}

export function pagePosts(
  posts: Post[],
  field: 'id' | 'post_date',
  offset: number,
  pageSize: number,
): { posts: Post[]; pagination: Pagination } {
  const page = sortPosts(posts, field).slice(offset, offset + pageSize);
  const hasMore = offset + pageSize < posts.length;
  return {
    posts: page,
    pagination: { offset, page_size: pageSize, next_offset: hasMore ? offset + pageSize : null, has_more: hasMore },
  };
}
