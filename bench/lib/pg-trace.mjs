/**
 * Preloaded into a gateway child (`node --import bench/lib/pg-trace.mjs`) by bench/trace-miss.ts:
 * appends to PGTRACE_FILE one line per PostgreSQL statement (start, duration in ms, text) and per
 * /v1 request (arrival, finish), on the child's performance.now() clock. A diagnostic only: the
 * appends are synchronous and cost time of their own.
 */
import { appendFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const out = process.env.PGTRACE_FILE;
// The gateway's own copy of pg, resolved from its dist/ (the CommonJS cache is shared with it).
const pg = createRequire(join(process.env.PGTRACE_DIST, 'cli.js'))('pg');
const line = (t0, ms, what) => appendFileSync(out, `${t0.toFixed(3)} ${ms.toFixed(3)} ${what.replace(/\s+/g, ' ').slice(0, 100)}\n`);

const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (config, values, cb) {
  const text = String(typeof config === 'string' ? config : config?.text);
  const t0 = performance.now();
  const done = () => line(t0, performance.now() - t0, text);
  // pg-pool calls with a callback, transactions await the promise: trace both.
  if (typeof values === 'function') return query.call(this, config, (...a) => (done(), values(...a)));
  if (typeof cb === 'function') return query.call(this, config, values, (...a) => (done(), cb(...a)));
  const r = query.call(this, config, values, cb);
  if (r && typeof r.then === 'function') r.then(done, () => {});
  return r;
};

const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, req, res) {
  if (event === 'request' && req.url?.startsWith('/v1/')) {
    const t0 = performance.now();
    line(t0, 0, `REQUEST ${req.url}`);
    res.on('finish', () => line(performance.now(), 0, 'FINISH'));
  }
  return emit.apply(this, arguments);
};
