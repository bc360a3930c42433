import { ClientClosedError, ClientOfflineError, ConnectionTimeoutError, DisconnectsClientError, SimpleError, SocketClosedUnexpectedlyError, SocketTimeoutError, TimeoutError } from 'redis';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { ADVISORY, parseRatePolicies } from '../../src/domain/rate-limit.js';
import type { RateCounters } from '../../src/store/ports.js';
import { FallbackRateCounters, type OnStoreFailure } from '../../src/store/shared/rate-fallback.js';
import { isStorageError, StorageUnavailable } from '../../src/store/storage-errors.js';

/**
 * What rate limits do while Redis cannot be reached (limits.onStoreFailure), with the errors
 * node-redis really throws then: their classes leave `name` as 'Error', which once made
 * every request of a replica answer 500 INTERNAL_ERROR while Redis was down.
 */
const redisDown = (): RateCounters => {
  const fail = () => Promise.reject(new ClientOfflineError());
  return { counts: fail, add: fail, take: fail, flush() {} };
};
const opened: FallbackRateCounters[] = [];
const counters = (mode: OnStoreFailure) => {
  const c = new FallbackRateCounters(redisDown(), mode, new FakeClock());
  opened.push(c);
  return c;
};
afterEach(() => opened.splice(0).forEach((c) => c.close()));

describe('node-redis failures are storage failures', () => {
  it.each([
    ['ClientOfflineError', new ClientOfflineError()],
    ['ClientClosedError', new ClientClosedError()],
    ['DisconnectsClientError', new DisconnectsClientError()],
    ['SocketClosedUnexpectedlyError', new SocketClosedUnexpectedlyError()],
    ['ConnectionTimeoutError', new ConnectionTimeoutError()],
    ['SocketTimeoutError', new SocketTimeoutError(1_000)],
    ['TimeoutError (a command past its timeout)', new TimeoutError()],
  ])('%s', (_, err) => {
    expect(err.name).toBe('Error'); // why the class is told by its constructor
    expect(isStorageError(err)).toBe(true);
  });

  it.each([
    "OOM command not allowed when used memory > 'maxmemory'. script: ec89, on @user_script:1.",
    "READONLY You can't write against a read only replica. script: ec89, on @user_script:1.",
    'LOADING Redis is loading the dataset in memory',
    'BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.',
    'MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk.',
  ])('a Redis that cannot serve writes now: %s', (message) => {
    expect(isStorageError(new SimpleError(message))).toBe(true);
  });

  it('a bug is not one, nor a reply that says the command is wrong', () => {
    expect(isStorageError(new TypeError('x is undefined'))).toBe(false);
    expect(isStorageError(new SimpleError('WRONGTYPE Operation against a key holding the wrong kind of value'))).toBe(false);
    expect(isStorageError(new SimpleError('ERR Error running script: attempt to compare nil with number'))).toBe(false);
  });
});

describe('FallbackRateCounters while Redis is down', () => {
  const now = Date.UTC(2026, 0, 1, 12);
  const twoPerMinute = parseRatePolicies('2/minute');

  it('open: counts in this process, enforcing the limit alone', async () => {
    const c = counters('open');
    const taken = [];
    for (let i = 0; i < 3; i++) taken.push((await c.take('key', twoPerMinute, now, true)).taken);
    expect(taken).toEqual([true, true, false]);
    expect([c.reachable, c.fallbacks]).toEqual([false, 3]);
  });

  it('closed: a request a limit applies to is refused with StorageUnavailable', async () => {
    const refused = await counters('closed').take('key', twoPerMinute, now, true).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StorageUnavailable);
    expect(refused).toMatchObject({ database: 'redis', code: 'ClientOfflineError' });
  });

  it('closed: a key without a rate limit (advisory window only) is still served, counted in memory', async () => {
    const c = counters('closed');
    const t = await c.take('unlimited', ADVISORY, now, true);
    expect(t.taken).toBe(true);
    expect(t.counts[0]!.count).toBe(1);
  });
});
