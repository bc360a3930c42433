import { describe, expect, it } from 'vitest';
import { dashboardStack } from '../helpers/dashboard.js';

/*
 * A dashboard page's query is read as strictly as the admin API's: a parameter the page does
 * not read, a grouping it does not know, or a single-valued parameter given twice is a 400
 * naming it. Before, each was dropped or cut to its first value, and the page answered 200
 * with the default report, as if it were the one asked for (`?form=` for `?from=`, `by=teams`).
 */
const TOKEN = 'admin-token-for-dashboard-query-0123';
const on = dashboardStack(TOKEN);

describe('a dashboard page asked for what it does not read', () => {
  const refused: ReadonlyArray<readonly [string, string]> = [
    ['/dashboard/usage?form=2026-01-01', "Unknown parameter 'form'"],
    ['/dashboard/usage?by=teams', "by: 'teams' is none of team, key, endpoint, day."],
    ['/dashboard/usage?by=team&by=keys', "by: 'keys' is none of"],
    ['/dashboard/usage?from=2026-01-01&from=2026-02-01', 'from: give it once.'],
    ['/dashboard/usage.csv?from=2026-01-01&from=2026-02-01', 'from: give it once.'],
    ['/dashboard/usage.csv?by=team', "Unknown parameter 'by'"],
    ['/dashboard/audit?acter=cli', "Unknown parameter 'acter'"],
    ['/dashboard/audit?action=key.create&action=key.revoke', 'action: give it once.'],
    ['/dashboard/alerts?page=2', "Unknown parameter 'page'"],
  ];
  for (const [url, message] of refused) {
    it(`${url}: 400 naming it (was 200 and the default report)`, async () => {
      const r = await on.d.get(url);
      expect(r.status).toBe(400);
      expect(r.text).toContain(message.replace(/'/g, '&#39;'));
      expect(r.headers['x-request-id']).toMatch(/^req_/);
    });
  }

  it('what the pages send themselves is read as before', async () => {
    for (const url of ['/dashboard/usage', '/dashboard/usage?from=2026-01-01&to=2026-01-31&by=team&by=day', '/dashboard/usage.csv?from=2026-01-01&to=2026-01-31', '/dashboard/audit?from=&to=&actor=cli&action=&target=', '/dashboard/alerts?limit=10']) {
      const r = await on.d.get(url);
      expect(r.status, url).toBe(200);
    }
  });
});

describe('a dashboard form with a field given twice', () => {
  it('a single-valued field: 400 naming it, nothing changed (was read as its first value)', async () => {
    const r = await on.d.postRaw('/dashboard/teams', `name=twice-a&name=twice-b&credits=&_csrf=${encodeURIComponent(on.d.csrf)}`);
    expect(r.status).toBe(400);
    expect(r.text).toContain('name: give it once.');
    expect(r.headers['x-request-id']).toMatch(/^req_/);
    expect((await on.s.app.backend.teams.list()).map((t) => t.name)).not.toContain('twice-a');
  });

  it('checkboxes repeat as before', async () => {
    const r = await on.d.post('/dashboard/keys', { name: 'two-boxes', endpoints: ['profile', 'company'], strategies: ['cached', 'fetch'] });
    expect(r.status).toBe(201);
    expect((await on.s.app.backend.keys.list()).find((k) => k.name === 'two-boxes')?.endpoints).toEqual(['profile', 'company']);
  });
});
