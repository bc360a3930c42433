import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

/*
 * The dashboard's files, all served by the gateway itself: nothing is fetched from anywhere
 * else, so the pages work on a machine without internet and no request leaves it. Ours are in
 * ./assets (copied into dist/ by the build); Chart.js's UMD build comes from its package.
 */

const OWN = fileURLToPath(new URL('./assets', import.meta.url));
// The package exports no ./package.json; its main file sits in dist/ beside the UMD build.
const CHART_JS = join(dirname(createRequire(import.meta.url).resolve('chart.js')), 'chart.umd.js');

const FILES: ReadonlyArray<readonly [name: string, path: string, type: string]> = [
  ['dashboard.css', join(OWN, 'dashboard.css'), 'text/css; charset=utf-8'],
  ['dashboard.js', join(OWN, 'dashboard.js'), 'text/javascript; charset=utf-8'],
  ['charts.js', join(OWN, 'charts.js'), 'text/javascript; charset=utf-8'],
  ['chart.umd.js', CHART_JS, 'text/javascript; charset=utf-8'],
];

export function registerAssets(app: FastifyInstance): void {
  for (const [name, path, type] of FILES) {
    // Served to anyone: they hold no data. Cached for a while; a restart with new files is seen within the hour.
    app.get(`/assets/${name}`, async (_request, reply) => reply.header('cache-control', 'public, max-age=3600').type(type).send(createReadStream(path)));
  }
}
