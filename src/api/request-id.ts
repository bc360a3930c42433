import { monotonicFactory } from 'ulid';

const next = monotonicFactory();

/** `req_` + a 26-char ULID: prefix-style like the provider's ids, and sortable by time. */
export function newRequestId(now: number = Date.now()): string {
  return 'req_' + next(now);
}
