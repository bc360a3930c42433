import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { runCli } from '../helpers/cli.js';
import { startStack, type Reply, type Stack } from '../helpers/stack.js';

/*
 * Usage by several groupings and the CSV export (README "Usage"), on a real gateway with the
 * simulator as the provider and a fake clock across a UTC midnight: the CSV, parsed by a real
 * RFC 4180 parser, says what the JSON report says; the CLI prints the same bytes.
 */
const TOKEN = 'admin-token-for-usage-export-0123456789';
const clock = new FakeClock(Date.UTC(2026, 2, 30, 22, 0));
let s: Stack;
beforeAll(async () => {
  s = await startStack({ clock, config: { adminToken: TOKEN, keys: { defaults: { rate: null, credits: null } } } });
});
afterAll(async () => s.close());

const admin = (path: string): Promise<Reply> => s.get('/admin' + path, { key: null, headers: { authorization: `Bearer ${TOKEN}` } });
const cli = (...args: string[]) => runCli([...args, '--data-dir', s.dataDir]);

interface Grouped {
  day: string;
  team: string | null;
  key_id: string;
  key_name: string | null;
  requests: number;
  cache_hits: number;
  credits: number;
  credits_saved: number;
}

describe('usage export', () => {
  const keys: Record<string, { id: string; secret: string }> = {};

  beforeAll(async () => {
    const create = async (name: string, team?: string) => {
      const r = await s.get('/admin/keys', {
        key: null,
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name, ...(team ? { team } : {}) }),
      });
      expect(r.status, r.text).toBe(201);
      return { id: r.json.id as string, secret: r.json.key as string };
    };
    // Names a spreadsheet or a naive parser would trip on: separators, quotes, a line break, formulas.
    keys.quoted = await create('ops, "night" shift', '=HYPERLINK("http://x")');
    keys.minus = await create('-2+3', 'growth');
    // A line break: names are refused control characters now, but one stored before that (written here
    // through the store, below the admin API's checks) must still export whole.
    keys.lines = s.newKey({ name: 'two\r\nlines', team: 'growth' });
    keys.plain = await create('plain');
    // Day 1 (30 March, 22:00): misses and a hit; day 2 (31 March, 01:00): more of both.
    const get = async (k: string, q: string) => expect((await s.get(`/v1/company?${q}`, { key: keys[k]!.secret })).status).toBe(200);
    await get('quoted', 'org_id=1');
    await get('minus', 'org_id=2');
    await get('lines', 'org_id=1'); // a hit on quoted's answer
    clock.set(Date.UTC(2026, 2, 31, 1, 0));
    await get('plain', 'org_id=3');
    await get('minus', 'org_id=3'); // a hit
    await get('lines', 'org_id=4');
    await get('quoted', 'org_id=5');
  });

  it('GET /admin/usage/export.csv: RFC 4180 with a header, one row per day, team and key, the JSON report\'s figures, formulas neutralised', async () => {
    const r = await admin('/usage/export.csv?from=2026-03-30&to=2026-03-31');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(r.headers['content-disposition']).toBe('attachment; filename="tollgate-usage-20260330T000000Z-20260401T000000Z.csv"');
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.text.endsWith('\r\n')).toBe(true);
    const records = parse(r.text, { columns: true, record_delimiter: '\r\n' }) as Record<string, string>[];
    expect(Object.keys(records[0]!)).toEqual(['day', 'team', 'key_id', 'key_name', 'requests', 'cache_hits', 'credits_spent', 'credits_saved']);

    const json = await admin('/usage?from=2026-03-30&to=2026-03-31&by=day,team,key');
    expect(json.status).toBe(200);
    expect(json.json.by).toEqual(['day', 'team', 'key']);
    const rows = json.json.rows as Grouped[];
    const formula = (v: string) => (/^[=+\-@\t\r]/.test(v) ? `'${v}` : v);
    expect(records).toEqual(
      rows.map((x) => ({
        day: x.day,
        team: formula(x.team ?? ''),
        key_id: x.key_id,
        key_name: formula(x.key_name ?? ''),
        requests: String(x.requests),
        cache_hits: String(x.cache_hits),
        credits_spent: String(x.credits),
        credits_saved: String(x.credits_saved),
      })),
    );
    expect(records.find((x) => x.key_id === keys.quoted!.id && x.day === '2026-03-30')).toMatchObject({ team: `'=HYPERLINK("http://x")`, key_name: 'ops, "night" shift' });
    expect(records.find((x) => x.key_id === keys.minus!.id && x.day === '2026-03-31')).toMatchObject({ key_name: "'-2+3", requests: '1', cache_hits: '1', credits_spent: '0' });
    expect(records.find((x) => x.key_id === keys.lines!.id && x.day === '2026-03-30')!.key_name).toBe('two\r\nlines');

    // The same figures as the single-grouping reports, and the provider's bill.
    const total = (f: string) => records.reduce((n, x) => n + Number(x[f]), 0);
    const byDay = (await admin('/usage?from=2026-03-30&to=2026-03-31&by=day')).json.rows as Array<{ id: string; requests: number; credits: number }>;
    expect(byDay.map((d) => [d.id, d.requests, d.credits])).toEqual(
      ['2026-03-30', '2026-03-31'].map((day) => [day, ...['requests', 'credits_spent'].map((f) => records.filter((x) => x.day === day).reduce((n, x) => n + Number(x[f]), 0))]),
    );
    expect(total('credits_spent')).toBe(s.sim.creditsCharged());
    expect(total('requests')).toBe(7);
    expect(total('cache_hits')).toBe(2);
  });

  it('`tollgate usage --csv` prints the same bytes; `--by team,day` the admin API\'s rows', async () => {
    s.app.costs.flush();
    const api = await admin('/usage/export.csv?from=2026-03-30&to=2026-03-31');
    const out = await cli('usage', '--csv', '--from', '2026-03-30', '--to', '2026-03-31');
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toBe(api.text);

    const grouped = await admin('/usage?from=2026-03-30&to=2026-03-31&by=team,day');
    expect(grouped.json.rows.map((x: Grouped) => Object.keys(x))).toContainEqual(['team', 'day', 'requests', 'cache_hits', 'credits', 'credits_saved']);
    const json = await cli('usage', '--by', 'team,day', '--from', '2026-03-30', '--to', '2026-03-31', '--json');
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(grouped.json.rows);
    // Ordered by team (byte-wise, no team last), then day.
    expect(grouped.json.rows.map((x: Grouped) => [x.team, x.day])).toEqual([
      ['=HYPERLINK("http://x")', '2026-03-30'],
      ['=HYPERLINK("http://x")', '2026-03-31'],
      ['growth', '2026-03-30'],
      ['growth', '2026-03-31'],
      [null, '2026-03-31'],
    ]);
    const text = await cli('usage', '--by', 'team,day', '--from', '2026-03-30', '--to', '2026-03-31');
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^team\s+day\s+requests\s+cache_hits\s+credits\s+credits_saved$/m);
    expect(text.stdout).toMatch(/^\(none\)\s+2026-03-31\s+1\s+0\s+\d+\s+0$/m);
  });

  it('one grouping keeps its answer shape; bad groupings, windows and parameters are refused in the envelope', async () => {
    const one = await admin('/usage?from=2026-03-30&to=2026-03-31&by=team');
    expect(one.json.by).toBe('team');
    expect(Object.keys(one.json.rows[0])).toEqual(['id', 'name', 'requests', 'cache_hits', 'credits', 'credits_saved', 'unsettled_credits']);
    const refusals: Array<[string, string, RegExp]> = [
      ['/usage?by=team,owner', 'INVALID_PARAMETER', /^by: expected key, team, day, endpoint\.$/],
      ['/usage?by=team,team', 'INVALID_PARAMETER', /named twice/],
      ['/usage?by=', 'INVALID_PARAMETER', /by: expected/],
      ['/usage/export.csv?from=yesterday', 'INVALID_PARAMETER', /from: expected an ISO 8601 date/],
      ['/usage/export.csv?from=2026-03-31&to=2026-03-30', 'INVALID_PARAMETER', /to must be after from/],
      ['/usage/export.csv?by=team', 'UNKNOWN_PARAMETER', /Unknown parameter 'by'; allowed: from, to\./],
    ];
    for (const [path, code, message] of refusals) {
      const r = await admin(path);
      expect(r.status, path).toBe(400);
      expect(r.json.error.code, path).toBe(code);
      expect(r.json.error.message, path).toMatch(message);
      expect(r.json.error.request_id).toBe(r.headers['x-request-id']);
    }
    expect((await s.get('/admin/usage/export.csv', { key: null })).status).toBe(401);
  });
});
