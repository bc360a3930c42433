/**
 * How long the gateway's event loop waits while it answers long usage reports, and how far its
 * memory grows (`npx tsx bench/report-stalls.ts [keys, default 200] [days, default 730]
 * [--shared]`): daily totals for `keys` keys × 3 endpoints × `days` days in tollgate.db (or, with
 * --shared, in a PostgreSQL database of this run's own: the shared backend), a gateway over it,
 * and /healthz asked every ~2 ms while each admin report runs (the CSV export, the multi-group
 * reports, the overview); the longest /healthz answer is about the longest stall.
 * REPORT_STALLS_NODE_ARGS gives the gateway node flags (`--trace-gc`, `--cpu-prof`; its log and
 * profile stay in the data dir, printed at the end); REPORT_STALLS_ONLY, a regular expression,
 * picks the reports by label. Not part of
 * `npm run bench`: a tool for issue 16's "no stall from admin reports and CSV exports"
 * (BENCHMARKS.md §7).
 */
import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { request } from 'undici';
import { CLI, distApp, distConfig } from './lib/dist.js';
import { createSharedStore } from './lib/shared-store.js';
import { startStack } from './lib/stack.js';

const DAY = 86_400_000;
const args = process.argv.slice(2).filter((a) => a !== '--shared');
const SHARED = process.argv.includes('--shared');
const KEYS = Number(args[0] ?? 200);
const DAYS = Number(args[1] ?? 730);
const ENDPOINTS = ['profile', 'company', 'company_posts'];
const dir = mkdtempSync(join(tmpdir(), 'tollgate-report-stalls-'));
const today = Math.floor(Date.now() / DAY);
const store = SHARED ? await createSharedStore() : null;
if (store) {
  execFileSync(process.execPath, [CLI, 'migrate', '--data-dir', dir], { env: { ...process.env, ...store.env }, stdio: 'ignore' });
  const c = new pg.Client({ connectionString: store.env.TOLLGATE_DATABASE_URL });
  await c.connect();
  await c.query(
    `INSERT INTO usage_daily SELECT $1::integer - d, 'key_bench_' || k, e, 10, 7, 9, 21, 0
     FROM generate_series(1, $2::integer) d, generate_series(0, $3::integer - 1) k, unnest($4::text[]) e`,
    [today, DAYS, KEYS, ENDPOINTS],
  );
  await c.query('ANALYZE usage_daily');
  await c.end();
} else {
  const { openMainDb } = await distApp();
  const { validateConfig } = await distConfig();
  openMainDb(validateConfig({ dataDir: dir })).close();
  const db = new Database(join(dir, 'tollgate.db'));
  const ins = db.prepare('INSERT INTO usage_daily VALUES (?, ?, ?, ?, ?, ?, ?, 0)');
  db.transaction(() => {
    for (let d = DAYS; d >= 1; d--) for (let k = 0; k < KEYS; k++) for (const e of ENDPOINTS) ins.run(today - d, `key_bench_${k}`, e, 10, 7, 9, 21);
  })();
  db.close();
}
const TOKEN = 'bench-admin-token-0123456789';
writeFileSync(join(dir, 'b.yaml'), `adminToken: ${TOKEN}\n`);
const nodeArgs = (process.env.REPORT_STALLS_NODE_ARGS ?? '').split(' ').filter(Boolean);
const only = new RegExp(process.env.REPORT_STALLS_ONLY ?? '');
const stack = await startStack({ dir, configFile: join(dir, 'b.yaml'), nodeArgs, ...(store && { env: store.env }) });
/** The gateway's resident memory now, MB. */
const rssMb = () => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${stack.gw.pid}/status`, 'utf8'))?.[1]) / 1024;
const admin = { authorization: `Bearer ${TOKEN}` };
const from = new Date((today - DAYS - 1) * DAY).toISOString().slice(0, 10);
/**
 * The gateway's own longest event-loop stall since the last scrape (its GET /metrics gauge,
 * monitorEventLoopDelay at 10 ms resolution, reset by each scrape). The /healthz wait above
 * also holds this process's own stalls, which receiving an 18 MB answer makes long.
 */
async function lagMax(): Promise<number> {
  const text = await (await request(`${stack.gw.url}/metrics`)).body.text();
  const m = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text);
  return m ? Number(m[1]) * 1000 : NaN;
}

// The dashboard's pages take a session: signed in as its sign-in form does (same-origin POST).
const signIn = await request(`${stack.gw.url}/dashboard/sign-in`, {
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded', origin: stack.gw.url, 'sec-fetch-site': 'same-origin' },
  body: new URLSearchParams({ token: TOKEN }).toString(),
});
await signIn.body.dump();
const session = { cookie: String(signIn.headers['set-cookie']).split(';')[0]! };

async function probeDuring(label: string, path: string, headers: Record<string, string> = admin) {
  if (!only.test(label)) return;
  let stop = false;
  let worst = 0;
  const rssBefore = rssMb();
  let rssMax = rssBefore;
  const probe = (async () => {
    while (!stop) {
      const t = performance.now();
      await (await request(stack.gw.url + '/healthz')).body.dump();
      worst = Math.max(worst, performance.now() - t);
      rssMax = Math.max(rssMax, rssMb());
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  await lagMax(); // a scrape resets the gauge
  await new Promise((r) => setTimeout(r, 300));
  const t0 = performance.now();
  const res = await request(stack.gw.url + path, { headers });
  const text = await res.body.text();
  const took = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 100));
  stop = true;
  await probe;
  const lag = await lagMax();
  console.log(label, res.statusCode, `${text.length} bytes, took ${took.toFixed(0)} ms, longest /healthz ${worst.toFixed(1)} ms, gateway's event-loop stall max ${lag.toFixed(1)} ms, RSS ${rssBefore.toFixed(0)} → max ${rssMax.toFixed(0)} MB`);
}
console.log(`${KEYS} keys × ${ENDPOINTS.length} endpoints × ${DAYS} days of daily totals ${store ? `in PostgreSQL (${store.database})` : 'in tollgate.db'}; gateway ${stack.gw.url}`);
for (let i = 0; i < 2; i++) {
  await probeDuring('quiet', '/healthz');
  await probeDuring('export.csv', `/admin/usage/export.csv?from=${from}`);
  await probeDuring('usage?by=team,day', `/admin/usage?by=team,day&from=${from}`);
  await probeDuring('usage?by=key', `/admin/usage?by=key&from=${from}`);
  await probeDuring('usage?by=key,day', `/admin/usage?by=key,day&from=${from}`);
  await probeDuring('overview', '/admin/overview');
  await probeDuring('dashboard overview', '/dashboard', session);
  await probeDuring('dashboard usage by key, day', `/dashboard/usage?from=${from}&by=key&by=day`, session);
  await probeDuring('dashboard usage.csv', `/dashboard/usage.csv?from=${from}`, session);
}
await stack.gw.stop();
await stack.sim.stop();
await store?.drop();
if (nodeArgs.length > 0) console.log(`gateway log and profiles kept in ${dir}`);
else rmSync(dir, { recursive: true, force: true });
