import { afterEach, beforeEach } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import type { LedgerRow } from '../../src/domain/ledger.js';
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
