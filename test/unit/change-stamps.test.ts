import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChangeStamps } from '../../src/store/change-stamps.js';
import { stampsOfMoves } from '../../src/store/redis/change-beacon.js';

/**
 * Stamps name the writes behind a Redis change counter's moves (issue #13, guarantee 7): a
 * replica forgets nothing only when every move since its last read names writes it heard.
 * Anything it cannot account for must come out null (forget: the safe side).
 */
describe('change stamps', () => {
  it('an announce takes the stamps issued since the last, per topic, each never seen before', () => {
    const s = new ChangeStamps();
    const a = s.next('keys');
    const b = s.next('keys');
    const c = s.next('cache');
    expect(new Set([a, b, c]).size).toBe(3);
    expect(s.take('keys')).toEqual([a, b]);
    expect(s.take('keys')).toEqual([]);
    expect(s.take('cache')).toEqual([c]);
    expect(new ChangeStamps().next('keys')).not.toBe(a);
  });

  it('more writes than an announce can name make it say so (null), not name only some', () => {
    const s = new ChangeStamps();
    for (let i = 0; i < 40; i++) s.next('keys');
    expect(s.take('keys')).toBeNull();
    const after = s.next('keys');
    expect(s.take('keys')).toEqual([after]);
  });
});

describe('stampsOfMoves', () => {
  it('names the writes of exactly the moves since the last read, or nothing at all', () => {
    const move = fc.option(fc.array(fc.stringMatching(/^[a-z0-9.]{1,8}$/), { minLength: 1, maxLength: 3 }), { nil: null });
    fc.assert(
      fc.property(fc.array(move, { maxLength: 40 }), fc.array(move, { minLength: 1, maxLength: 40 }), (earlier, since) => {
        // The log as Redis keeps it: newest first, the last 32 moves, each with the counter's value, '-' for a move that names nothing.
        const log = [...earlier, ...since].map((m, i) => `${i + 1} ${m === null ? '-' : m.join(',')}`).reverse().slice(0, 32);
        const before = String(earlier.length);
        const now = String(earlier.length + since.length);
        const got = stampsOfMoves(before, now, log);
        if (since.length > 32 || since.some((m) => m === null)) expect(got).toBeNull();
        else expect(got?.slice().sort()).toEqual(since.flatMap((m) => m!).sort());
      }),
    );
  });

  it('a counter that went back, vanished or did not move accounts for nothing', () => {
    expect(stampsOfMoves('5', '3', ['3 a', '2 b'])).toBeNull();
    expect(stampsOfMoves('5', null, ['5 a'])).toBeNull();
    expect(stampsOfMoves('5', '5', ['5 a'])).toBeNull();
    expect(stampsOfMoves('5', '6', ['6 a,b', '5 c'])).toEqual(['a', 'b']);
  });

  it('a counter that did not exist at the last read (no move yet, or Redis restarted empty, which that read answered) moved from 0', () => {
    // A fresh installation: the first key made, then another, both seen in one read. Was null: every replica forgot every key,
    // and one that could not reach PostgreSQL by then refused them all.
    expect(stampsOfMoves(null, '2', ['2 a', '1 b'])).toEqual(['b', 'a']);
    expect(stampsOfMoves(null, '1', ['1 -'])).toBeNull();
    expect(stampsOfMoves(null, '2', ['2 a'])).toBeNull();
    expect(stampsOfMoves(null, '33', Array.from({ length: 32 }, (_, i) => `${33 - i} s${33 - i}`))).toBeNull();
  });

  it('a move the log does not hold (made by a replica of an earlier version, which only counts) is not mistaken for an earlier one', () => {
    // Moves 6 and 7 were logged; move 8 was only counted.
    expect(stampsOfMoves('7', '8', ['7 a', '6 b'])).toBeNull();
    expect(stampsOfMoves('5', '8', ['7 a', '6 b'])).toBeNull();
    expect(stampsOfMoves('5', '7', ['7 a', '6 b'])).toEqual(['b', 'a']);
  });
});
