/** X-Cache-Status values, for tools that expect the simple form. */
export type SimpleCacheStatus = 'HIT' | 'MISS' | 'REFRESH' | 'STALE' | 'BYPASS';

/** What the request log line, metrics and the ledger learn about one request as it passes the stages. */
export interface LookupTrace {
  keyId?: string;
  keyName?: string;
  identity?: string;
  cache?: SimpleCacheStatus;
  collapsed?: boolean;
  upstreamMs?: number;
  upstreamRequestId?: string;
  /** Credits the shared provider key paid for this request. */
  creditsUsed?: number;
  /** Credits a local answer saved: what the fetch that stored the entry cost. */
  creditsSaved?: number;
  /** creditsUsed is the reservation's estimate: the provider may have charged a call whose answer never came. */
  unsettled?: boolean;
}
