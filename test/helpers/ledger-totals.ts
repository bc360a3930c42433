import type { Stack } from './stack.js';

/** The whole ledger of an embedded stack, summed over every key: requests, credits, and the part charged at estimates. */
export function ledgerTotals(s: Pick<Stack, 'app'>): { requests: number; credits: number; unsettled: number } {
  const rows = s.app.costs.ledger.usage(0, Number.MAX_SAFE_INTEGER, 'key');
  return {
    requests: rows.reduce((a, r) => a + r.requests, 0),
    credits: rows.reduce((a, r) => a + r.credits, 0),
    unsettled: rows.reduce((a, r) => a + r.unsettled_credits, 0),
  };
}
