import { withTimeout } from '../time-bound.js';

/** A health probe that takes longer than this reports the store as unreachable. */
const PROBE_TIMEOUT_MS = 2_000;

/** 'ok', or what went wrong, within PROBE_TIMEOUT_MS. */
export async function probe(p: Promise<void>): Promise<string> {
  try {
    await withTimeout(p, PROBE_TIMEOUT_MS, `no answer within ${PROBE_TIMEOUT_MS} ms`);
    return 'ok';
  } catch (err) {
    return `unreachable: ${(err as Error).message}`;
  }
}
