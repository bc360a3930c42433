import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { FlushTimer } from '../../src/store/flush-timer.js';
import { WriteGate } from '../../src/store/write-gate.js';
import { StorageUnavailable } from '../../src/store/storage-errors.js';

const busy = () => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });

describe('WriteGate', () => {
  it('a clock stepped back while shut keeps it shut for one backoff at most, not for the length of the step', () => {
    const clock = new FakeClock(1_000_000_000);
    const gate = new WriteGate('tollgate.db', { clock, baseBackoffMs: 100, maxBackoffMs: 350 });
    expect(() =>
      gate.run(() => {
        throw busy();
      }),
    ).toThrow('database is locked');
    // NTP steps the clock back an hour: the backoff's end, an hour and 100 ms ahead now, was refusing every write until then.
    clock.advance(-3_600_000);
    expect(() => gate.run(() => 1)).toThrow(StorageUnavailable);
    expect(() => gate.assertOpen()).toThrow(StorageUnavailable);
    clock.advance(100);
    expect(gate.run(() => 1)).toBe(1);
    expect(gate.state().ok).toBe(true);
  });

  it('after a failure refuses without trying until its backoff passes; backoff doubles up to the cap; a success reopens it', () => {
    const clock = new FakeClock(1_000_000);
    const changes: Array<string | null> = [];
    const gate = new WriteGate('tollgate.db', { clock, baseBackoffMs: 100, maxBackoffMs: 350, onChange: (e) => changes.push(e ? (e as { code?: string }).code! : null) });
    let tried = 0;
    const failing = () => {
      tried++;
      throw busy();
    };

    expect(() => gate.run(failing)).toThrow('database is locked');
    expect(gate.state()).toEqual({ ok: false, failuresTotal: 1, code: 'SQLITE_BUSY', since: 1_000_000 });
    // Shut: refused at once, the write is not even tried.
    const refused = (() => {
      try {
        gate.run(failing);
      } catch (e) {
        return e;
      }
    })();
    expect(refused).toBeInstanceOf(StorageUnavailable);
    expect((refused as StorageUnavailable).retryInMs).toBe(100);
    expect(tried).toBe(1);

    clock.advance(100);
    expect(() => gate.run(failing)).toThrow('database is locked'); // the probe, failing again
    expect(() => gate.run(failing)).toThrow(StorageUnavailable);
    clock.advance(199);
    expect(() => gate.run(failing)).toThrow(StorageUnavailable); // 200 ms now
    clock.advance(1);
    expect(() => gate.run(failing)).toThrow('database is locked');
    clock.advance(349);
    expect(() => gate.run(failing)).toThrow(StorageUnavailable); // 400 capped at 350
    clock.advance(1);
    expect(gate.run(() => 42)).toBe(42);
    expect(gate.state()).toEqual({ ok: true, failuresTotal: 3, code: null, since: null });
    // One report when writes start failing, one when they work again; not one per failure.
    expect(changes).toEqual(['SQLITE_BUSY', null]);
    expect(tried).toBe(3);
  });

  it('a bug is not an outage: an error that is not the database refusing leaves the gate open', () => {
    const gate = new WriteGate('cache.db', { clock: new FakeClock() });
    expect(() =>
      gate.run(() => {
        throw new TypeError('boom');
      }),
    ).toThrow(TypeError);
    expect(gate.state().ok).toBe(true);
    expect(gate.run(() => 1)).toBe(1);
  });

  it('probe() tries a write only while shut and past the backoff, and its success reopens the gate', () => {
    const clock = new FakeClock();
    const gate = new WriteGate('tollgate.db', { clock, baseBackoffMs: 100 });
    let probes = 0;
    gate.probe(() => probes++);
    expect(probes).toBe(0); // open: nothing to probe
    expect(() => gate.run(() => { throw Object.assign(new Error('full'), { code: 'SQLITE_FULL' }); })).toThrow('full');
    gate.probe(() => probes++);
    expect(probes).toBe(0); // within the backoff
    clock.advance(100);
    gate.probe(() => {
      probes++;
      throw Object.assign(new Error('still full'), { code: 'SQLITE_FULL' });
    });
    expect([probes, gate.state().ok]).toEqual([1, false]);
    clock.advance(200);
    gate.probe(() => probes++);
    expect([probes, gate.state().ok]).toEqual([2, true]);
  });
});

describe('FlushTimer', () => {
  afterEach(() => vi.useRealTimers());

  it('a flush that throws is reported and retried with a doubling backoff, never thrown out of the timer', () => {
    vi.useFakeTimers();
    const errors: string[] = [];
    let fail = 3;
    let flushed = 0;
    const timer = new FlushTimer(
      1_000,
      () => {
        if (fail-- > 0) throw busy();
        flushed++;
      },
      (e) => errors.push((e as { code?: string }).code ?? '?'),
    );
    timer.schedule();
    vi.advanceTimersByTime(1_000);
    expect(errors).toEqual(['SQLITE_BUSY']);
    vi.advanceTimersByTime(1_999);
    expect(errors).toHaveLength(1); // the retry waits 2 s
    vi.advanceTimersByTime(1);
    expect(errors).toHaveLength(2);
    vi.advanceTimersByTime(4_000);
    expect(errors).toHaveLength(3);
    vi.advanceTimersByTime(8_000);
    expect(flushed).toBe(1);
    // Back to the normal period after a success.
    timer.schedule();
    vi.advanceTimersByTime(1_000);
    expect(flushed).toBe(2);
  });

  it('a flush that answers with a promise (a network store): a rejection is reported and retried like a throw, never unhandled', async () => {
    vi.useFakeTimers();
    const errors: string[] = [];
    let fail = 2;
    let flushed = 0;
    const timer = new FlushTimer(
      1_000,
      () => (fail-- > 0 ? Promise.reject(busy()) : Promise.resolve(void flushed++)),
      (e) => errors.push((e as { code?: string }).code ?? '?'),
    );
    timer.schedule();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(errors).toEqual(['SQLITE_BUSY']);
    await vi.advanceTimersByTimeAsync(1_999);
    expect(errors).toHaveLength(1); // the retry waits 2 s, as after a throw
    await vi.advanceTimersByTimeAsync(1);
    expect(errors).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(4_000);
    expect(flushed).toBe(1);
    timer.schedule();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(flushed).toBe(2);
  });
});

describe('WriteGate.runRetrying (a write that never waits for a lock on the event loop)', () => {
  it('answers with a value, not a promise, when the first try lands', () => {
    const gate = new WriteGate('tollgate.db', { clock: new FakeClock(0) });
    expect(gate.runRetrying(() => 7, 250)).toBe(7);
  });

  it('retries SQLITE_BUSY from timers, the event loop turning meanwhile, and resolves once the lock is free', async () => {
    const gate = new WriteGate('tollgate.db', { clock: new FakeClock(0) });
    let locked = true;
    let tries = 0;
    const write = () => {
      tries++;
      if (locked) throw busy();
      return 'written';
    };
    const r = gate.runRetrying(write, 1_000);
    expect(r).toBeInstanceOf(Promise);
    let turns = 0;
    while (tries < 4) {
      turns++;
      await new Promise((res) => setImmediate(res));
    }
    locked = false;
    await expect(r).resolves.toBe('written');
    expect(turns).toBeGreaterThan(3);
    expect(gate.state().ok).toBe(true);
  });

  it('past its budget fails as a blocking write would: the gate shuts, the next is refused at once', async () => {
    const gate = new WriteGate('tollgate.db', { clock: new FakeClock(0) });
    let tries = 0;
    const r = gate.runRetrying(() => {
      tries++;
      throw busy();
    }, 30);
    await expect(r).rejects.toMatchObject({ code: 'SQLITE_BUSY' });
    // 1, 2, 4, 4… ms apart within 30 ms, and one try at the deadline.
    expect(tries).toBeGreaterThanOrEqual(2);
    expect(tries).toBeLessThanOrEqual(12);
    expect(gate.state()).toMatchObject({ ok: false, code: 'SQLITE_BUSY' });
    expect(() => gate.runRetrying(() => 1, 30)).toThrow(StorageUnavailable);
  });

  it('does not retry what is not SQLITE_BUSY: a full disk fails at once', () => {
    const gate = new WriteGate('tollgate.db', { clock: new FakeClock(0) });
    const full = () => {
      throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    };
    expect(() => gate.runRetrying(full, 250)).toThrow('database or disk is full');
    expect(gate.state().code).toBe('SQLITE_FULL');
  });
});
