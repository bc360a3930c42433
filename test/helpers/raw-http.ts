import { connect } from 'node:net';

/** One HTTP/1.x answer read off a raw socket. */
export interface RawAnswer {
  status: number;
  reason: string;
  /** Lower-cased names; a repeated field keeps its last value. */
  headers: Record<string, string>;
  body: string;
}

/** The answers a raw exchange produced, and whether the server closed the connection. */
export interface RawExchange {
  answers: RawAnswer[];
  /** Bytes after the last complete answer (a truncated answer shows here). */
  rest: string;
  timedOut: boolean;
  /** What the socket saw, in order (for a failure's message). */
  events: string;
}

/**
 * Parse consecutive answers. `heads[i]` says whether answer i has no body (it answers HEAD).
 * A body is framed by Content-Length, by chunks, or — only once `closed` — by the end of the connection.
 */
export function parseAnswers(bytes: Buffer, heads: readonly boolean[], closed = true): { answers: RawAnswer[]; rest: string } {
  const answers: RawAnswer[] = [];
  let pos = 0;
  while (pos < bytes.length) {
    const end = bytes.indexOf('\r\n\r\n', pos, 'latin1');
    if (end < 0) break;
    const lines = bytes.toString('latin1', pos, end).split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3}) ?(.*)$/.exec(lines[0]!);
    if (!m) break;
    // An interim answer (100 Continue) has no body and precedes the real one.
    if (m[1]!.startsWith('1')) {
      pos = end + 4;
      continue;
    }
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const c = line.indexOf(':');
      if (c > 0) headers[line.slice(0, c).toLowerCase()] = line.slice(c + 1).trim();
    }
    // A request refused by node's parser (reason phrase = the error code) was never known to be a HEAD.
    const parserLevel = /^[A-Z]+(_[A-Z]+)+$/.test(m[2]!) && headers.connection === 'close';
    const start = end + 4;
    let body: Buffer;
    let next: number;
    if (heads[answers.length] && !parserLevel) {
      body = Buffer.alloc(0);
      next = start;
    } else if (headers['content-length'] !== undefined) {
      next = start + Number(headers['content-length']);
      if (next > bytes.length) break;
      body = bytes.subarray(start, next);
    } else if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
      const parts: Buffer[] = [];
      let p = start;
      let complete = false;
      for (;;) {
        const eol = bytes.indexOf('\r\n', p, 'latin1');
        if (eol < 0) break;
        const size = parseInt(bytes.toString('latin1', p, eol), 16);
        if (size === 0) {
          const trailerEnd = bytes.indexOf('\r\n', eol + 2, 'latin1');
          if (trailerEnd < 0) break;
          p = trailerEnd + 2;
          complete = true;
          break;
        }
        if (eol + 2 + size + 2 > bytes.length) break;
        parts.push(bytes.subarray(eol + 2, eol + 2 + size));
        p = eol + 2 + size + 2;
      }
      if (!complete) break;
      body = Buffer.concat(parts);
      next = p;
    } else {
      if (!closed) break;
      body = bytes.subarray(start);
      next = bytes.length;
    }
    answers.push({ status: Number(m[1]), reason: m[2]!, headers, body: body.toString('utf8') });
    pos = next;
  }
  return { answers, rest: bytes.toString('latin1', pos) };
}

/**
 * Write `data` on a new connection and read until the server closes it or `expected` answers
 * arrived. `safetyMs` only keeps a hung exchange from hanging the test: it is reported, never
 * waited on by a passing run.
 */
export function exchange(port: number, data: Buffer | string, heads: readonly boolean[], expected: number, safetyMs = 10_000): Promise<RawExchange> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const events: string[] = [];
    let done = false;
    const sock = connect(port, '127.0.0.1', () => sock.write(data));
    const finish = (timedOut: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ ...parseAnswers(Buffer.concat(chunks), heads), timedOut, events: events.join(' ') });
    };
    const timer = setTimeout(() => finish(true), safetyMs);
    sock.on('data', (d: Buffer) => {
      events.push(`data:${d.length}`);
      chunks.push(d);
      if (parseAnswers(Buffer.concat(chunks), heads, false).answers.length >= expected) finish(false);
    });
    sock.on('end', () => {
      events.push('end');
      finish(false);
    });
    sock.on('close', () => finish(false));
    // A reset after the server answered and closed is part of a refused request.
    sock.on('error', (err: NodeJS.ErrnoException) => {
      events.push(`error:${err.code}`);
      finish(false);
    });
  });
}
