import { z } from 'zod';

/**
 * Milliseconds, most of them a timer's: Node.js holds at most 2^31 - 1 ms (about 24.8 days) in
 * one and runs a longer one after 1 ms (a TimeoutOverflowWarning), so a maintenance pass set to
 * a month ran every millisecond and a keep-alive connection was closed at once. Refused instead.
 */
export const TIMER_MAX_MS = 2_147_483_647;

export const ms = z.number().int().min(1).max(TIMER_MAX_MS, `must be at most ${TIMER_MAX_MS} (about 24.8 days: the longest timer Node.js holds)`);
