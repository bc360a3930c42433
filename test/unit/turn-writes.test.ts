import { describe, expect, it } from 'vitest';
import { TurnWrites } from '../../src/http/turn-writes.js';
import { createLogger } from '../../src/obs/logger.js';
import { RequestLines, type RequestFields } from '../../src/obs/request-log.js';

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

  it("writes a turn's request lines as one chunk at its end, in order; a line made outside a turn at once", async () => {
    const writes: string[] = [];
    const lines = new RequestLines(createLogger('info', { write: (chunk: string) => void writes.push(chunk) }));
    const w = new TurnWrites(() => {}, lines);
    const line = (n: number): RequestFields => ({ requestId: `req_${n}`, clientIp: '127.0.0.1', method: 'GET', url: '/v1/profile', status: 200, ms: 1 });
    for (let i = 0; i < 5; i++) w.defer(() => lines.add(line(i)));
    w.defer(() => {
      throw new Error('bad header');
    });
    await nextTurn();
    expect(writes).toHaveLength(1);
    const ids = writes[0]!.trim().split('\n').map((l) => (JSON.parse(l) as { request_id: string }).request_id);
    expect(ids).toEqual(['req_0', 'req_1', 'req_2', 'req_3', 'req_4']);
    lines.add(line(9));
    expect(writes).toHaveLength(2);
    expect(JSON.parse(writes[1]!)).toMatchObject({ request_id: 'req_9', msg: 'request' });
  });

  it('releases the lines even when reporting a failed write throws', async () => {
    const writes: string[] = [];
    const lines = new RequestLines(createLogger('info', { write: (chunk: string) => void writes.push(chunk) }));
    const w = new TurnWrites(() => {
      throw new Error('the error report failed too');
    }, lines);
    w.defer(() => lines.add({ requestId: 'req_1', clientIp: '127.0.0.1', method: 'GET', url: '/v1/company', status: 200, ms: 1 }));
    w.defer(() => {
      throw new Error('bad header');
    });
    const uncaught = new Promise<unknown>((resolve) => process.once('uncaughtException', resolve));
    await nextTurn();
    expect(((await uncaught) as Error).message).toBe('the error report failed too');
    expect(writes).toHaveLength(1);
    lines.add({ requestId: 'req_2', clientIp: '127.0.0.1', method: 'GET', url: '/v1/company', status: 200, ms: 1 });
    expect(writes).toHaveLength(2);
  });
});
