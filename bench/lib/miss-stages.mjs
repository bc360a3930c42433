/**
 * Preloaded into a gateway child (`node --import bench/lib/miss-stages.mjs`) by bench/miss-c16.ts:
 * timestamps of what an embedded (SQLite) gateway does for each miss, on the child's
 * performance.now() clock, written to MISSSTAGES_FILE as one line per event:
 *   t dur kind imm tag text
 * kind: REQ (a /v1 request emitted by node:http; tag = the url), HEAD (writeHead of its answer;
 * tag = its x-request-id), FIN ('finish'), SQL (one better-sqlite3 statement; text = db file and
 * the statement's first words; tag = its first string parameter, or the `key` of a named one),
 * UP (one undici request, create → trailers; tag = the path), IMM (one setImmediate callback,
 * run; t = when it was scheduled, dur = until it ended; text = function name and run start).
 * `imm` is the id of the setImmediate callback an event happened inside (0: none), so a
 * statement is tied to the batch that made it.
 * Lines are buffered in memory and written when no request has come for 300 ms after some did
 * (between the driver's rounds), so that tracing adds no file I/O inside a measured round.
 */
import { appendFileSync } from 'node:fs';
import diagnostics from 'node:diagnostics_channel';
import http from 'node:http';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { performance } from 'node:perf_hooks';

const out = process.env.MISSSTAGES_FILE;
const req = createRequire(join(process.env.MISSSTAGES_DIST, 'cli.js'));
const Database = req('better-sqlite3');
const now = () => performance.now();
let buf = [];
let imm = 0;
let immNo = 0;
let lastReq = 0;
let requests = 0;
const line = (t, dur, kind, tag, text) => buf.push(`${t.toFixed(3)} ${dur.toFixed(3)} ${kind} ${imm} ${tag} ${text}`);

// Between rounds: write what the round left, and the loop's utilisation over it.
let elu = performance.eventLoopUtilization();
setInterval(() => {
  if (requests === 0 || now() - lastReq < 300) return;
  requests = 0;
  const e = performance.eventLoopUtilization(elu);
  elu = performance.eventLoopUtilization();
  line(now(), 0, 'ELU', '-', `${e.utilization.toFixed(4)} ${e.active.toFixed(1)} ${e.idle.toFixed(1)}`);
  appendFileSync(out, buf.join('\n') + '\n');
  buf = [];
}, 100).unref();

// Statements: the prototype of every better-sqlite3 statement, BEGIN and COMMIT included.
const probe = new Database(':memory:');
const Statement = Object.getPrototypeOf(probe.prepare('SELECT 1'));
probe.close();
const words = (sql) => sql.replace(/\s+/g, ' ').trim().split(' ').slice(0, 5).join('_');
const tagOf = (args) => {
  const a = args[0];
  if (typeof a === 'string') return a;
  if (Array.isArray(a) && typeof a[0] === 'string') return a[0];
  if (a && typeof a === 'object') return a.key ?? a.requestId ?? '-';
  return '-';
};
for (const m of ['run', 'get', 'all']) {
  const orig = Statement[m];
  Statement[m] = function (...args) {
    const t = now();
    try {
      return orig.apply(this, args);
    } finally {
      const db = this.database ? basename(this.database.name) : '?';
      line(t, now() - t, 'SQL', String(tagOf(args)).replace(/\s/g, '_'), `${db}:${m}:${words(this.source)}`);
    }
  };
}

// PRAGMAs run through exec (no-wait.ts's busy timeouts) bound a batch as those through a statement do.
const exec = Database.prototype.exec;
Database.prototype.exec = function (sql) {
  const t = now();
  try {
    return exec.call(this, sql);
  } finally {
    line(t, now() - t, 'SQL', '-', `${basename(this.name)}:exec:${words(sql)}`);
  }
};

// setImmediate: when each callback was scheduled, started and ended.
const si = globalThis.setImmediate;
globalThis.setImmediate = function (fn, ...args) {
  const scheduled = now();
  const id = ++immNo;
  return si(function immediate() {
    const outer = imm;
    imm = id;
    const start = now();
    try {
      return fn.apply(this, args);
    } finally {
      line(scheduled, now() - scheduled, 'IMM', id, `${fn.name || 'anon'} ${start.toFixed(3)}`);
      imm = outer;
    }
  });
};

// The provider calls: undici's, from the request's creation to its last byte.
const started = new WeakMap();
diagnostics.subscribe('undici:request:create', ({ request }) => started.set(request, now()));
diagnostics.subscribe('undici:request:headers', ({ request }) => {
  const t = started.get(request);
  if (t !== undefined) line(now(), 0, 'UPH', request.path, '-');
});
diagnostics.subscribe('undici:request:trailers', ({ request }) => {
  const t = started.get(request);
  if (t !== undefined) line(t, now() - t, 'UP', request.path, '-');
});

const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, rq, res) {
  if (event === 'request' && rq.url?.startsWith('/v1/')) {
    const t = now();
    lastReq = t;
    requests++;
    line(t, 0, 'REQ', rq.url, '-');
    const writeHead = res.writeHead;
    res.writeHead = function (status, headers) {
      line(now(), 0, 'HEAD', headers?.['x-request-id'] ?? '-', rq.url);
      return writeHead.apply(this, arguments);
    };
    res.on('finish', () => line(now(), 0, 'FIN', rq.url, '-'));
  }
  return emit.apply(this, arguments);
};
