import { Transform, type TransformCallback } from 'node:stream';

/**
 * The provider key must never reach a client, even when the provider echoes it (an error
 * page quoting the Authorization header). Everything pass-through returns is scrubbed.
 */
export const REDACTED = '[redacted]';

/** Keys this short would mangle ordinary text; config keys are far longer (as in map.ts safeMessage). */
const MIN_SECRET = 4;

export function scrubText(text: string, secret: string): string {
  return secret.length >= MIN_SECRET && text.includes(secret) ? text.split(secret).join(REDACTED) : text;
}

/**
 * Streams bytes through with every occurrence of `secret` replaced, including one split
 * across chunks: the last `secret.length - 1` bytes of each chunk are held back until the
 * next one shows whether they start an occurrence. Matching is on bytes, so a multi-byte
 * character split across chunks is never an issue.
 */
export class SecretScrubber extends Transform {
  private readonly secret: Buffer;
  private readonly replacement = Buffer.from(REDACTED);
  private carry: Buffer = Buffer.alloc(0);

  constructor(secret: string) {
    super();
    this.secret = Buffer.from(secret.length >= MIN_SECRET ? secret : '');
  }

  override _transform(chunk: Buffer | string, _enc: BufferEncoding, done: TransformCallback): void {
    const buf = Buffer.concat([this.carry, typeof chunk === 'string' ? Buffer.from(chunk) : chunk]);
    if (this.secret.length === 0) {
      this.carry = Buffer.alloc(0);
      done(null, buf);
      return;
    }
    const parts: Buffer[] = [];
    let from = 0;
    for (let at = buf.indexOf(this.secret, from); at >= 0; at = buf.indexOf(this.secret, from)) {
      parts.push(buf.subarray(from, at), this.replacement);
      from = at + this.secret.length;
    }
    // Bytes that could still begin an occurrence wait for the next chunk.
    const keep = Math.min(buf.length - from, this.secret.length - 1);
    parts.push(buf.subarray(from, buf.length - keep));
    this.carry = Buffer.from(buf.subarray(buf.length - keep));
    done(null, Buffer.concat(parts));
  }

  override _flush(done: TransformCallback): void {
    done(null, this.carry);
  }
}
