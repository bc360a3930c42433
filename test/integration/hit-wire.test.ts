import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchange } from '../helpers/raw-http.js';
import { startStack, type Stack } from '../helpers/stack.js';

/*
 * Success answers leave as three pieces, the envelope's head, the stored data and the
 * envelope's tail, in one writev (answer-writer.ts): the bytes a client reads must be exactly
 * the answer's body, Content-Length included, with characters beyond Latin-1 in the data, on
 * GET and HEAD, and when pipelined behind requests that ask for `100 Continue`.
 */
let s: Stack;
let port: number;
beforeAll(async () => {
  s = await startStack();
  port = Number(new URL(s.url).port);
});
afterAll(async () => s.close());

/** The data's text exactly as the answer carries it: between `"data":` and `,"meta":`. */
const dataText = (body: string) => body.slice(body.indexOf('"data":') + 7, body.lastIndexOf(',"meta":'));

/** A profile whose data holds characters beyond Latin-1, found among the simulator's. */
async function nonLatin1Profile(): Promise<{ path: string; miss: string }> {
  for (let id = 1; id < 200; id++) {
    const r = await s.get(`/v1/profile?person.id=${id}`);
    expect(r.status).toBe(200);
    if (/[^\u0000-\u00ff]/.test(dataText(r.text))) return { path: `/v1/profile?person.id=${id}`, miss: r.text };
  }
  throw new Error('no simulator profile with a character beyond Latin-1 in its first 200');
}

describe('hits on the wire', () => {
  it('a hit carries the stored data byte for byte, its Content-Length the body’s bytes; HEAD the same length and no body', async () => {
    const { path, miss } = await nonLatin1Profile();
    const get = (head = false) => `${head ? 'HEAD' : 'GET'} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.key}\r\n\r\n`;
    const r = await exchange(port, get() + get(true) + get(), [false, true, false], 3, 5000);
    expect(r.timedOut).toBe(false);
    const [hit, head, again] = r.answers;
    for (const a of [hit!, again!]) {
      expect(a.status).toBe(200);
      expect(a.headers['x-cache-status']).toBe('HIT');
      expect(Number(a.headers['content-length'])).toBe(Buffer.byteLength(a.body));
      expect(dataText(a.body)).toBe(dataText(miss));
      expect(JSON.parse(a.body).request_id).toBe(a.headers['x-request-id']);
      expect(JSON.parse(a.body).meta).toMatchObject({ cached: true, credits_used: 0 });
    }
    expect(head!.status).toBe(200);
    expect(head!.headers['content-length']).toBe(hit!.headers['content-length']);
    expect(head!.body).toBe('');
    expect(r.rest).toBe('');
  });

  it('pipelined hits asking for 100 Continue each arrive whole, in order, head and body together', async () => {
    const { path, miss } = await nonLatin1Profile();
    const ask = `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.key}\r\nExpect: 100-continue\r\n\r\n`;
    const r = await exchange(port, ask.repeat(4), [false, false, false, false], 4, 5000);
    expect(r.timedOut).toBe(false);
    expect(r.answers).toHaveLength(4);
    const ids = new Set<string>();
    for (const a of r.answers) {
      expect(a.status).toBe(200);
      expect(Number(a.headers['content-length'])).toBe(Buffer.byteLength(a.body));
      expect(dataText(a.body)).toBe(dataText(miss));
      ids.add(JSON.parse(a.body).request_id);
    }
    expect(ids.size).toBe(4);
    expect(r.rest).toBe('');
  });
});
