/**
 * The least a gateway does on a miss, as plainly as node:http and undici allow: the request
 * forwarded to the provider with the provider's key (one keep-alive pool, as Tollgate's), the
 * answer read whole and sent back. No cache, no reservation, no ledger: the anchor "bare
 * node:http proxy" of benchmark 9's misses (bench/baseline-server.ts `proxy:URL#KEY`). What it
 * adds over calling the provider directly is what forwarding alone costs a Node server at
 * that concurrency on this machine; Tollgate's miss adds its durable writes on top.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Agent, request } from 'undici';

export function bareProxy(upstream: string, providerKey: string): (req: IncomingMessage, res: ServerResponse) => void {
  const dispatcher = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
  const authorization = `Bearer ${providerKey}`;
  return (req, res) => {
    request(`${upstream}${req.url!}`, { dispatcher, headers: { authorization } }).then(
      async (r) => {
        const body = await r.body.text();
        res.writeHead(r.statusCode, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)) });
        res.end(body);
      },
      () => {
        res.writeHead(502, { 'content-length': '0' });
        res.end();
      },
    );
  };
}
