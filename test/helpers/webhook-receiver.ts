import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the receiver does with the next request: answer a status (with headers), or never answer. */
export type Behaviour = { status: number; headers?: Record<string, string> } | 'hang';

export interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly at: number;
  /** When the receiver answered (or gave up on a hanging request: the client went away). */
  ended?: number;
}

export interface Receiver {
  readonly url: string;
  readonly received: Received[];
  /** Behaviours for the next requests, in order; after them every request gets `fallback`. */
  script(next: Behaviour[], fallback?: Behaviour): void;
  close(): Promise<void>;
}

/** A webhook receiver on loopback: records every request, answers as scripted. */
export async function startReceiver(fallback: Behaviour = { status: 200 }): Promise<Receiver> {
  const received: Received[] = [];
  let queue: Behaviour[] = [];
  let otherwise = fallback;
  const hanging = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(r);
      const b = queue.shift() ?? otherwise;
      if (b === 'hang') {
        hanging.add(res);
        res.on('close', () => {
          r.ended = Date.now();
          hanging.delete(res);
        });
        return;
      }
      res.writeHead(b.status, { 'content-type': 'text/plain', ...b.headers }).end('ok');
      r.ended = Date.now();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    script(next, fb) {
      queue = [...next];
      if (fb) otherwise = fb;
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
