import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { topLevelMembers } from '../../src/upstream/json-members.js';

describe('topLevelMembers', () => {
  it('cuts out each member of a top-level object as text that parses to the same value, whatever the spacing', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.constantFrom(undefined, 0, 1, 2, '\t'), (obj, indent) => {
        const text = JSON.stringify(obj, null, indent);
        const members = topLevelMembers(text);
        expect([...members.keys()].sort()).toEqual(Object.keys(obj).sort());
        for (const [k, v] of Object.entries(obj)) expect(JSON.parse(members.get(k)!)).toEqual(v);
      }),
      { numRuns: 500, seed: 1123 },
    );
  });

  it('keeps integers beyond 2^53 and number spellings exactly as written', () => {
    const text = '{ "request_id" : "req_1", "data" : {"id": 7123456789012345678, "score": 1.0, "s": "a\\"}{"},\n"meta":{"n":[1,2]} }';
    const m = topLevelMembers(text);
    expect(m.get('data')).toBe('{"id": 7123456789012345678, "score": 1.0, "s": "a\\"}{"}');
    expect(m.get('meta')).toBe('{"n":[1,2]}');
    expect(m.get('request_id')).toBe('"req_1"');
  });

  it('a repeated member is the last one, as JSON.parse reads it', () => {
    expect(topLevelMembers('{"data":1,"data":{"x":2}}').get('data')).toBe('{"x":2}');
  });
});
