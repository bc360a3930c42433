import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatTraceparent, newSpanId, newTraceId, parseTraceparent, traceContext } from '../../src/domain/trace-context.js';

const hex = (n: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: n, maxLength: n });
const traceIdArb = hex(32).filter((s) => /[^0]/.test(s));
const spanIdArb = hex(16).filter((s) => /[^0]/.test(s));
const VALID = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('traceparent parsing (W3C Trace Context)', () => {
  it('a valid version-00 header parses to its fields and formats back to itself (fast-check)', () => {
    fc.assert(
      fc.property(traceIdArb, spanIdArb, hex(2), (traceId, parentId, flags) => {
        const header = `00-${traceId}-${parentId}-${flags}`;
        expect(parseTraceparent(header)).toEqual({ version: '00', traceId, parentId, flags });
      }),
    );
  });

  it('never throws, and accepts only what the spec calls valid, for any string (fast-check)', () => {
    const valid = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF-f0 ,') , maxLength: 80 })), (s) => {
        const p = parseTraceparent(s);
        if (p === null) return;
        const m = valid.exec(s);
        expect(m).not.toBeNull();
        expect(p.version).not.toBe('ff');
        expect(p.traceId).not.toMatch(/^0+$/);
        expect(p.parentId).not.toMatch(/^0+$/);
        if (p.version === '00') expect(s.length).toBe(55);
      }),
    );
  });

  it('a one-character change to a valid header is either still valid with that change, or refused (fast-check)', () => {
    fc.assert(
      fc.property(fc.nat(54), fc.string({ minLength: 1, maxLength: 1 }), (at, ch) => {
        const s = VALID.slice(0, at) + ch + VALID.slice(at + 1);
        const p = parseTraceparent(s);
        if (p) expect(`${p.version}-${p.traceId}-${p.parentId}-${p.flags}`).toBe(s);
      }),
    );
  });

  it.each([
    ['empty', ''],
    ['all-zero trace id', '00-00000000000000000000000000000000-00f067aa0ba902b7-01'],
    ['all-zero parent id', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01'],
    ['version ff', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'],
    ['uppercase hex', '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01'],
    ['version 00 with more after it', VALID + '-extra'],
    ['too short', VALID.slice(0, 54)],
    ['two headers, joined by node', `${VALID}, ${VALID}`],
    ['later version with no dash after the flags', '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x'],
    ['not hex', '00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01'],
  ])('refuses %s', (_what, header) => {
    expect(parseTraceparent(header)).toBeNull();
  });

  it('a later version is read as far as version 00 goes', () => {
    expect(parseTraceparent('cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-what-comes-next')).toEqual({
      version: 'cc',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      parentId: '00f067aa0ba902b7',
      flags: '09',
    });
  });
});

describe("a request's trace context", () => {
  it("joins the caller's trace with a span of its own, flags and tracestate passed on (fast-check)", () => {
    fc.assert(
      fc.property(traceIdArb, spanIdArb, hex(2), fc.string({ unit: fc.constantFrom(...'abc=,@1 '), minLength: 1, maxLength: 40 }), (traceId, parentId, flags, state) => {
        const tc = traceContext(`00-${traceId}-${parentId}-${flags}`, state);
        expect(tc).toMatchObject({ traceId, parentId, flags, state });
        expect(tc.spanId).toMatch(/^[0-9a-f]{16}$/);
        // What the provider receives: the same trace, this request's span as its parent.
        expect(parseTraceparent(formatTraceparent(tc))).toEqual({ version: '00', traceId, parentId: tc.spanId, flags });
      }),
    );
  });

  it('starts a new, sampled trace when the header is absent or malformed, and then drops tracestate', () => {
    for (const header of [undefined, 'garbage', '00-00000000000000000000000000000000-00f067aa0ba902b7-01', [VALID, VALID]]) {
      const tc = traceContext(header, 'vendor=1');
      expect(tc.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(tc.traceId).not.toBe('4bf92f3577b34da6a3ce929d0e0e4736');
      expect(tc).toMatchObject({ parentId: null, flags: '01', state: null });
    }
  });

  it('keeps a tracestate of printable ASCII up to 512 characters; several headers are one list', () => {
    expect(traceContext(VALID, ['a=1', 'b=2']).state).toBe('a=1,b=2');
    expect(traceContext(VALID, 'a=' + 'x'.repeat(510)).state).toHaveLength(512);
    expect(traceContext(VALID, 'a=' + 'x'.repeat(511)).state).toBeNull();
    expect(traceContext(VALID, 'a=\u00e9').state).toBeNull();
    expect(traceContext(VALID, undefined).state).toBeNull();
  });

  it('a later version passes on only the sampled bit', () => {
    expect(traceContext('cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-x', undefined).flags).toBe('01');
    expect(traceContext('cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-08', undefined).flags).toBe('00');
  });

  it('new ids are lowercase hex of the right length, never zero, and do not repeat', () => {
    const traces = new Set<string>();
    const spans = new Set<string>();
    for (let i = 0; i < 5_000; i++) {
      const t = newTraceId();
      const s = newSpanId();
      expect(t).toMatch(/^[0-9a-f]{32}$/);
      expect(s).toMatch(/^[0-9a-f]{16}$/);
      traces.add(t);
      spans.add(s);
    }
    expect(traces.size).toBe(5_000);
    expect(spans.size).toBe(5_000);
  });
});
