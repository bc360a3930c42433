import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REDACTED, scrubText, SecretScrubber } from '../../src/upstream/scrub.js';

const KEY = 'sim_provider_key_for_tests_0123456789';

async function streamed(chunks: readonly Buffer[], secret = KEY): Promise<string> {
  return text(Readable.from(chunks).pipe(new SecretScrubber(secret)));
}

/** Splits `buf` at the given cut points (as bytes, so a multi-byte character may be cut). */
function split(buf: Buffer, cuts: readonly number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (buf.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const p of points) {
    out.push(buf.subarray(from, p));
    from = p;
  }
  out.push(buf.subarray(from));
  return out;
}

describe('scrubText', () => {
  it('replaces every occurrence, and leaves text without the key alone', () => {
    expect(scrubText(`Bearer ${KEY} and ${KEY}`, KEY)).toBe(`Bearer ${REDACTED} and ${REDACTED}`);
    expect(scrubText('nothing here', KEY)).toBe('nothing here');
  });
});

describe('SecretScrubber', () => {
  it('scrubs a key split across chunks', async () => {
    const chunks = [Buffer.from(`<p>Authorization: Bearer ${KEY.slice(0, 9)}`), Buffer.from(KEY.slice(9, 20)), Buffer.from(`${KEY.slice(20)}</p>`)];
    expect(await streamed(chunks)).toBe(`<p>Authorization: Bearer ${REDACTED}</p>`);
  });

  it('keeps a body that only looks like the key’s start at its end', async () => {
    expect(await streamed([Buffer.from('abc sim_provider'), Buffer.from('_key')])).toBe('abc sim_provider_key');
  });

  it('property: however the body is cut into chunks, the output is the whole body scrubbed', async () => {
    const piece = fc.constantFrom(KEY, KEY.slice(0, 10), KEY.slice(10), 'sim_', 'é', '✓', ' ', 'x', 'sim_provider_key_for_tests_01234567');
    await fc.assert(
      fc.asyncProperty(fc.array(piece, { maxLength: 20 }), fc.array(fc.nat(2000), { maxLength: 8 }), async (pieces, cuts) => {
        const whole = pieces.join('');
        const out = await streamed(split(Buffer.from(whole), cuts));
        return out === whole.split(KEY).join(REDACTED) && !out.includes(KEY);
      }),
      { numRuns: 500 },
    );
  });

  it('passes bytes through untouched when the secret is too short to scrub safely', async () => {
    expect(await streamed([Buffer.from('ab'), Buffer.from('c')], 'abc')).toBe('abc');
  });
});
