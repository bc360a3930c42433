import { afterEach, beforeEach } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import type { LedgerRow, UsageRow } from '../../src/domain/ledger.js';
import type { BackendFactory, Handle } from './backends.js';

/** 2026-01-01 10:00 UTC: on an hour boundary, a Thursday. */
export const T0 = Date.UTC(2026, 0, 1, 10);
export const HOUR = 3_600_000;
export const DAY = 86_400_000;

/** A fresh storage per test, on a fake clock at T0; `h()` is its first handle. */
export function withHandle(factory: BackendFactory): () => Handle {
  let h: Handle | undefined;
  beforeEach(async () => {
    h = await factory.open({ clock: new FakeClock(T0) });
  });
  afterEach(async () => {
    await h?.cleanup();
    h = undefined;
  });
  return () => h!;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * `probe()` until `ok` holds of its answer, for at most `ms`: how a change made through
 * another handle is waited for (the ports promise such changes are seen within 2 s).
 */
export async function eventually<T>(probe: () => T | Promise<T>, ok: (v: T) => boolean, ms = 2_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (ok(v)) return v;
    if (Date.now() > until) return v;
    await sleep(20);
  }
}

let seq = 0;
/** A ledger row of `keyId` at `ts`; everything else a plain cache hit unless overridden. */
export function row(keyId: string, ts: number, over: Partial<LedgerRow> = {}): LedgerRow {
  return {
    requestId: `req_${++seq}_${ts}`,
    ts,
    keyId,
    endpoint: 'profile',
    identity: 'profile:person.id:1',
    cache: 'HIT',
    status: 200,
    code: null,
    credits: 0,
    creditsSaved: 0,
    upstreamMs: null,
    totalMs: 1.5,
    upstreamRequestId: null,
    ...over,
  };
}

/** A unique name per call, so that property runs on one storage never share a scope. */
export const unique = (prefix: string) => `${prefix}_${++seq}`;

/**
 * The usage a ledger of one row per request gives for `rows` over [from, to), summed per the
 * group `groupOf` names (unsorted): what every report model of the contract sorts its own way.
 */
export function sumPerGroup(rows: readonly LedgerRow[], from: number, to: number, groupOf: (r: LedgerRow) => string | null): UsageRow[] {
  const out = new Map<string | null, UsageRow>();
  for (const r of rows) {
    if (r.ts < from || r.ts >= to) continue;
    const id = groupOf(r);
    const u = out.get(id) ?? { id, name: id, requests: 0, cache_hits: 0, credits: 0, credits_saved: 0, unsettled_credits: 0 };
    u.requests++;
    if (r.cache === 'HIT' || r.cache === 'STALE') u.cache_hits++;
    u.credits += r.credits;
    u.credits_saved += r.creditsSaved;
    if (r.unsettled) u.unsettled_credits += r.credits;
    out.set(id, u);
  }
  return [...out.values()];
}
