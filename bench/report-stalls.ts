/**
 * How long the gateway's event loop waits while it answers long usage reports
 * (`npx tsx bench/report-stalls.ts [keys, default 200] [days, default 730]`): a tollgate.db whose
 * daily totals hold `keys` keys × 3 endpoints × `days` days, a gateway over it, and /healthz
 * asked every ~2 ms while each admin report runs (the CSV export, the multi-group reports, the
 * overview); the longest /healthz answer is about the longest stall. Not part of `npm run bench`:
 * a tool for issue 16's "no stall from admin reports and CSV exports" (BENCHMARKS.md §7).
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { distApp, distConfig } from './lib/dist.js';
import { startStack } from './lib/stack.js';

const DAY = 86_400_000;
const KEYS = Number(process.argv[2] ?? 200);
const DAYS = Number(process.argv[3] ?? 730);
const ENDPOINTS = ['profile', 'company', 'company_posts'];
const dir = mkdtempSync(join(tmpdir(), 'tollgate-report-stalls-'));
const { openMainDb } = await distApp();
const { validateConfig } = await distConfig();
openMainDb(validateConfig({ dataDir: dir })).close();
const db = new Database(join(dir, 'tollgate.db'));
const today = Math.floor(Date.now() / DAY);
const ins = db.prepare('INSERT INTO usage_daily VALUES (?, ?, ?, ?, ?, ?, ?, 0)');
db.transaction(() => {
  for (let d = DAYS; d >= 1; d--) for (let k = 0; k < KEYS; k++) for (const e of ENDPOINTS) ins.run(today - d, `key_bench_${k}`, e, 10, 7, 9, 21);
})();
db.close();
const TOKEN = 'bench-admin-token-0123456789';
writeFileSync(join(dir, 'b.yaml'), `adminToken: ${TOKEN}\n`);
const stack = await startStack({ dir, configFile: join(dir, 'b.yaml') });
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
  let stop = false;
  let worst = 0;
  const probe = (async () => {
    while (!stop) {
      const t = performance.now();
      await (await request(stack.gw.url + '/healthz')).body.dump();
      worst = Math.max(worst, performance.now() - t);
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
  console.log(label, res.statusCode, `${text.length} bytes, took ${took.toFixed(0)} ms, longest /healthz ${worst.toFixed(1)} ms, gateway's event-loop stall max ${lag.toFixed(1)} ms`);
}
console.log(`${KEYS} keys × ${ENDPOINTS.length} endpoints × ${DAYS} days of daily totals; gateway ${stack.gw.url}`);
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
rmSync(dir, { recursive: true, force: true });
