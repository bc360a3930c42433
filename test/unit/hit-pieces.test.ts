import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { withRequestId } from '../../src/domain/answer.js';
import type { CacheEntry } from '../../src/domain/cache-entry.js';
import { forwardAnswer, hitAnswer, staleAnswer } from '../../src/gateway/answers.js';

/*
 * A success answer leaves as the three pieces its body was joined from (Answer.bodyPieces):
 * the envelope's head, the stored data, the envelope's tail. The bytes on the wire must be the
 * body's, whatever the data holds (characters beyond Latin-1, surrogate pairs), or a client
 * would read another answer than the one decided.
 */

const entry = (data: string, meta: string): CacheEntry => ({
  key: 'profile|profile:person.id:1|experience_filter=default',
  endpoint: 'profile',
  identity: 'profile:person.id:1',
  status: 200,
  data,
  meta,
  errorCode: null,
  errorMessage: null,
  storedAt: 1_000,
  freshAsOf: 1_000,
  credits: 1,
  size: 600,
});
const wire = (p: readonly string[]) => Buffer.concat(p.map((x) => Buffer.from(x)));
/** JSON text of any value, its strings drawn from all of Unicode (JSON.stringify escapes lone surrogates). */
const jsonText = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v));
const metaText = fc.dictionary(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' })).map((m) => JSON.stringify(m));
const requestId = fc.stringMatching(/^req_[0-9A-Z]{26}$/);

describe('success answers leave as the pieces of their body', () => {
  it('hits, stale answers and forwarded answers: the pieces are the body, byte for byte, for any data and meta', () => {
    fc.assert(
      fc.property(jsonText, metaText, requestId, fc.integer({ min: 0, max: 10_000_000 }), (data, meta, rid, age) => {
        const e = entry(data, meta);
        const answers = [
          hitAnswer(e, rid, e.storedAt + age, 86_400_000).answer,
          staleAnswer(e, rid, e.storedAt + age, 86_400_000, { forwarded: true, fwdStatus: 503 }),
          forwardAnswer({ reason: 'uri-miss', stored: true, collapsed: false }, rid, data, meta, false, 3, {}),
        ];
        for (const a of answers) {
          expect(a.bodyPieces!.join('')).toBe(a.body);
          expect(wire(a.bodyPieces!).equals(Buffer.from(a.body))).toBe(true);
          expect(a.bodyPieces![1]).toBe(data);
          const parsed = JSON.parse(a.body);
          expect(parsed.request_id).toBe(rid);
          expect(parsed.data).toEqual(JSON.parse(data));
        }
      }),
    );
  });

  it("an answer whose request id is replaced (pass-through) loses pieces that hold the old one", () => {
    const a = forwardAnswer({ reason: 'uri-miss', stored: false, collapsed: false }, 'req_PROVIDER00000000000000000', '{"n":1}', '{}', false, 1, {});
    const b = withRequestId(a, 'req_01KBASELINE000000000000001');
    expect(JSON.parse(b.body).request_id).toBe('req_01KBASELINE000000000000001');
    expect(b.bodyPieces).toBeUndefined();
  });

  it('a not-found hit answers with its error envelope alone', () => {
    const e = { ...entry('x', '{}'), status: 404, data: null, meta: null, errorCode: 'NOT_FOUND', errorMessage: 'No such person.' };
    const { answer } = hitAnswer(e, 'req_01KBASELINE000000000000001', 1_000, 86_400_000);
    expect(answer.bodyPieces).toBeUndefined();
    expect(JSON.parse(answer.body).error.code).toBe('NOT_FOUND');
  });
});
