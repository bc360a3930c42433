/**
 * The anchors of benchmark 8's misses, each a process of its own as the gateway is:
 *   node --import tsx bench/miss-anchor-server.ts <upstream> <providerKey>
 *     a bare node:http proxy that only forwards (bench/lib/proxy-anchor.ts);
 *   node --import tsx bench/miss-anchor-server.ts <upstream> <providerKey> <databaseUrl> <redisUrl> <redisPrefix>
 *     the same making the store round trips issue 13's guarantees require (bench/lib/miss-anchor.ts).
 * Prints `listening <port>` once ready; ends on SIGTERM.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { missAnchor } from './lib/miss-anchor.js';
import { bareProxy } from './lib/proxy-anchor.js';

const [upstream, providerKey, databaseUrl, redisUrl, redisPrefix] = process.argv.slice(2) as [string, string, string?, string?, string?];
const anchor = databaseUrl && redisUrl && redisPrefix ? await missAnchor({ upstream, providerKey, databaseUrl, redisUrl, redisPrefix }) : null;
const server = createServer(anchor ? anchor.handle : bareProxy(upstream, providerKey));
server.keepAliveTimeout = 5_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`));
process.once('SIGTERM', () => server.close(() => void (anchor?.close() ?? Promise.resolve()).finally(() => process.exit(0))));
