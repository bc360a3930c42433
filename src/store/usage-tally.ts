import type { LedgerRow } from '../domain/ledger.js';

/** The span of one group of counted requests: a UTC minute (every day holds whole minutes). */
export const MINUTE_MS = 60_000;

/** The UTC minute of `ts`, as minutes since the epoch: usage_minute's `minute`. */
export const minuteOf = (ts: number): number => Math.floor(ts / MINUTE_MS);

/**
 * The counted requests of one UTC minute, key, endpoint and outcome (cache status, HTTP status,
 * error code): one row of `usage_minute` on both backends. `cache` and `code` are '' for none
 * (a primary key column cannot be null). `ts` is the earliest request's time: a report counts
 * the group in a range when `ts` falls inside it.
 */
export interface TallyGroup {
  minute: number;
  keyId: string;
  endpoint: string;
  cache: string;
  status: number;
  code: string;
  ts: number;
  requests: number;
  cacheHits: number;
  creditsSaved: number;
}

/** Groups held in memory at most (storage refusing writes for a long time); past it the oldest go, counted. */
export const MAX_TALLY_GROUPS = 100_000;

/**
 * Requests that charged nothing and reserved nothing (hits, refusals, collapsed followers),
 * counted in memory per group until the owner's flush writes them as one upsert per group:
 * no per-request row, so a hit costs no disk write. What a `kill -9` can lose is what was
 * counted since the last flush; never a charge (charged rows never come here).
 */
export class UsageTally {
  private groups = new Map<string, TallyGroup>();
  private counted = 0;
  private droppedRequests = 0;

  constructor(private readonly maxGroups = MAX_TALLY_GROUPS) {}

  add(r: LedgerRow): void {
    const minute = minuteOf(r.ts);
    const cache = r.cache ?? '';
    const code = r.code ?? '';
    const k = `${minute}\u0000${r.keyId}\u0000${r.endpoint}\u0000${cache}\u0000${r.status}\u0000${code}`;
    let g = this.groups.get(k);
    if (!g) {
      g = { minute, keyId: r.keyId, endpoint: r.endpoint, cache, status: r.status, code, ts: r.ts, requests: 0, cacheHits: 0, creditsSaved: 0 };
      this.groups.set(k, g);
      if (this.groups.size > this.maxGroups) this.dropOldest();
    }
    if (r.ts < g.ts) g.ts = r.ts;
    g.requests++;
    if (cache === 'HIT' || cache === 'STALE') g.cacheHits++;
    g.creditsSaved += r.creditsSaved;
    this.counted++;
  }

  /** Requests counted and not yet taken. */
  get requests(): number {
    return this.counted;
  }

  /** Requests dropped with the oldest groups past maxGroups. */
  get dropped(): number {
    return this.droppedRequests;
  }

  /** Every group, emptying the tally; give them back with restore() when they could not be written. */
  take(): TallyGroup[] {
    const out = [...this.groups.values()];
    this.groups = new Map();
    this.counted = 0;
    return out;
  }

  /** Groups a failed write took, merged back in (before what was counted since). */
  restore(groups: readonly TallyGroup[]): void {
    const later = this.groups;
    this.groups = new Map();
    this.counted = 0;
    for (const g of groups) this.merge(g);
    for (const g of later.values()) this.merge(g);
    while (this.groups.size > this.maxGroups) this.dropOldest();
  }

  /** Groups the caller gives up on (a write refused for a reason of their own): counted as dropped. */
  discard(groups: readonly TallyGroup[]): void {
    for (const g of groups) this.droppedRequests += g.requests;
  }

  private merge(g: TallyGroup): void {
    const k = `${g.minute}\u0000${g.keyId}\u0000${g.endpoint}\u0000${g.cache}\u0000${g.status}\u0000${g.code}`;
    const held = this.groups.get(k);
    this.counted += g.requests;
    if (!held) {
      this.groups.set(k, { ...g });
      return;
    }
    held.ts = Math.min(held.ts, g.ts);
    held.requests += g.requests;
    held.cacheHits += g.cacheHits;
    held.creditsSaved += g.creditsSaved;
  }

  private dropOldest(): void {
    const [k, g] = this.groups.entries().next().value as [string, TallyGroup];
    this.groups.delete(k);
    this.counted -= g.requests;
    this.droppedRequests += g.requests;
  }
}
