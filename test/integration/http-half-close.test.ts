import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';

/*
 * A client may close its sending side once its request is out (a half-close: shutdown(SHUT_WR),
 * `curl` behind some proxies, `nc -N`) and still read the answer. node:http's default ends such
 * a connection at once and aborts the request: a miss was still called, charged and cached, and
 * its client got nothing. Now the answer is written, then the connection closed.
 */
let s: Stack | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

/** The request sent over a raw connection whose sending side is then closed; everything read until the server closes. */
function halfClosed(url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), allowHalfOpen: true }, () => socket.end(request));
    let got = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (got += d));
    socket.on('close', () => resolve(got));
    socket.on('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no close after 10 s; read: ${got.slice(0, 200)}`)));
  });
}

describe('a client that half-closes after its request', () => {
  it('gets the answer of a miss (the provider taking 150 ms) and of a hit, then the connection closes', async () => {
    s = await startStack({ sim: { latencyMs: 150 } });
    const req = (id: number) => `GET /v1/profile?person.id=${id} HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${s!.key}\r\n\r\n`;
    const miss = await halfClosed(s.url, req(41));
    expect(miss).toMatch(/^HTTP\/1\.1 200 /);
    expect(miss).toMatch(/x-cache-status: MISS/i);
    expect(miss).toContain('"data"');
    const hit = await halfClosed(s.url, req(41));
    expect(hit).toMatch(/^HTTP\/1\.1 200 /);
    expect(hit).toMatch(/x-cache-status: HIT/i);
    expect(s.sim.callCount()).toBe(1);
  });

  it('gets a refusal too (no key), in the envelope with its request id', async () => {
    s = await startStack();
    const r = await halfClosed(s.url, 'GET /v1/profile?person.id=1 HTTP/1.1\r\nHost: gw\r\n\r\n');
    expect(r).toMatch(/^HTTP\/1\.1 401 /);
    expect(r).toMatch(/x-request-id: req_/i);
  });
});
