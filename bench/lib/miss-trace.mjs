/**
 * Preloaded into a gateway child (`node --import bench/lib/miss-trace.mjs`) by bench/trace-miss.ts:
 * appends to MISSTRACE_FILE one line per PostgreSQL statement, Redis command and provider call
 * (start, duration in ms, kind, text) and per /v1 request (arrival, finish), on the child's
 * performance.now() clock. Lines are buffered in memory and written when the answer has gone
 * (shortly after the request's 'finish'), so that tracing adds no synchronous I/O inside the measured span.
 */
import { appendFileSync } from 'node:fs';
import diagnostics from 'node:diagnostics_channel';
import http from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const out = process.env.MISSTRACE_FILE;
// The gateway's own copies of pg and node-redis, resolved from its dist/ (the CommonJS cache is shared with it).
const req = createRequire(join(process.env.MISSTRACE_DIST, 'cli.js'));
const pg = req('pg');
const RedisClient = req('@redis/client/dist/lib/client/index.js').default;
let buf = [];
const line = (t0, ms, kind, what) => buf.push(`${t0.toFixed(3)} ${ms.toFixed(3)} ${kind} ${String(what).replace(/\s+/g, ' ').slice(0, 90)}`);
const flush = () => setTimeout(() => {
  if (buf.length) appendFileSync(out, buf.join('\n') + '\n');
  buf = [];
}, 5); // after what the miss does once its answer has gone

const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (config, values, cb) {
  const text = String(typeof config === 'string' ? config : config?.text);
  const t0 = performance.now();
  const done = () => line(t0, performance.now() - t0, 'pg', text);
  // pg-pool calls with a callback, transactions await the promise: trace both.
  if (typeof values === 'function') return query.call(this, config, (...a) => (done(), values(...a)));
  if (typeof cb === 'function') return query.call(this, config, values, (...a) => (done(), cb(...a)));
  const r = query.call(this, config, values, cb);
  if (r && typeof r.then === 'function') r.then(done, done);
  return r;
};

const send = RedisClient.prototype.sendCommand;
RedisClient.prototype.sendCommand = function (args, options) {
  const t0 = performance.now();
  // A script is named by its first line of Lua; other commands by their name.
  const a = args.map(String);
  const what = a[0] === 'EVAL' || a[0] === 'EVALSHA' ? `${a[0]} ${a[1].trim().split('\n')[0]}` : a[0];
  const r = send.call(this, args, options);
  const done = () => line(t0, performance.now() - t0, 'redis', what);
  r.then(done, done);
  return r;
};

// The provider client is undici's: a request from its creation to its last byte.
const started = new WeakMap();
diagnostics.subscribe('undici:request:create', ({ request }) => started.set(request, performance.now()));
diagnostics.subscribe('undici:request:trailers', ({ request }) => {
  const t0 = started.get(request);
  if (t0 !== undefined) line(t0, performance.now() - t0, 'provider', request.path.split('?')[0]);
});

const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, req, res) {
  if (event === 'request' && req.url?.startsWith('/v1/')) {
    line(performance.now(), 0, 'REQUEST', req.url);
    res.on('finish', () => {
      line(performance.now(), 0, 'FINISH', '');
      flush();
    });
  }
  return emit.apply(this, arguments);
};
