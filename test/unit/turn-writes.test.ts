import { describe, expect, it } from 'vitest';
import { TurnWrites } from '../../src/http/turn-writes.js';

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

describe('TurnWrites', () => {
  it('holds writes until the end of the turn, then makes them in order; a throwing write does not stop the rest', async () => {
    const errors: unknown[] = [];
    const w = new TurnWrites((e) => errors.push(e));
    const done: string[] = [];
    w.defer(() => done.push('a'));
    await Promise.resolve(); // microtasks (a request's promise chain) run before the writes
    w.defer(() => {
      throw new Error('bad header');
    });
    w.defer(() => done.push('c'));
    expect(done).toEqual([]);
    await nextTurn();
    expect(done).toEqual(['a', 'c']);
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).message).toBe('bad header');
  });

  it('a write deferred by a write (an error answer replacing a failed one) runs at the next turn, once', async () => {
    const w = new TurnWrites(() => {});
    const done: string[] = [];
    w.defer(() => {
      done.push('first');
      w.defer(() => done.push('retry'));
    });
    await nextTurn();
    expect(done).toEqual(['first']);
    await nextTurn();
    expect(done).toEqual(['first', 'retry']);
    await nextTurn();
    expect(done).toEqual(['first', 'retry']);
  });
});
