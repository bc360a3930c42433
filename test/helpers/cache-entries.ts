import type { NewEntry } from '../../src/domain/cache-entry.js';

/** A small profile answer for person `id`, as the cache stores it; `over` changes any field. */
export const profileEntry = (id: number, over: Partial<NewEntry> = {}): NewEntry => ({
  key: `profile|profile:person.id:${id}|experience_filter=default`,
  endpoint: 'profile',
  identity: `profile:person.id:${id}`,
  status: 200,
  data: JSON.stringify({ person_id: String(id) }),
  meta: '{"source":"network"}',
  errorCode: null,
  errorMessage: null,
  storedAt: 1_000 + id,
  freshAsOf: 1_000 + id,
  credits: 3,
  ...over,
});
