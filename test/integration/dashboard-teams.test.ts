/**
 * Deleting a team from the dashboard over plain HTTP against a real gateway: a confirmation
 * page that lists the team's keys and asks where they go (another existing team, or none);
 * refusals answered with that page and a message, nothing deleted; the deletion and each key
 * moved audited under the session's actor, as DELETE /admin/teams/:name records them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { dashboardSession } from '../helpers/dashboard.js';
import { startStack, type Stack } from '../helpers/stack.js';

const TOKEN = 'admin-token-for-dashboard-teams-0000';
let s: Stack | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

describe('deleting a team from the dashboard', () => {
  it('asks where the keys go, refuses without an answer or with a team that does not exist, then moves them and deletes it, audited under the session', async () => {
    s = await startStack({ config: { adminToken: TOKEN } });
    const d = await dashboardSession(s, TOKEN);
    await s.app.backend.teams.set('growth', '300/month');
    await s.app.backend.teams.set('marketing', null);
    const a = s.newKey({ name: 'crm', team: 'growth' });
    const b = s.newKey({ name: 'old-bot', team: 'growth' });
    await s.app.backend.keys.revoke(b.id, 'cli');

    // From the Teams list and the team's page, a "Delete team" button leads to the confirmation.
    expect((await d.get('/dashboard/teams')).text).toContain('action="/dashboard/teams/growth/delete"');
    expect((await d.get('/dashboard/teams/growth')).text).toMatch(/action="\/dashboard\/teams\/growth\/delete"[\s\S]*Delete team<\/button>/);
    const confirm = await d.get('/dashboard/teams/growth/delete');
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('<h1>Delete team growth?</h1>');
    expect(confirm.text).toContain('Its 2 keys (revoked ones too): crm, old-bot');
    expect(confirm.text).toContain('<option value="marketing">marketing</option>');
    expect(confirm.text).not.toContain('<option value="growth">');
    expect(confirm.text).toContain('value="unassign"');

    const refusals: Array<[Record<string, string>, number, string]> = [
      [{}, 409, 'Team &#39;growth&#39; still has 2 keys (revoked ones count): choose where they go, to another team or out of any team.'],
      [{ keys: 'reassign', reassign: '' }, 400, 'Choose the team to move the keys to.'],
      [{ keys: 'reassign', reassign: 'nowhere' }, 400, 'No team named &#39;nowhere&#39; to move the keys to'],
      [{ keys: 'reassign', reassign: 'growth' }, 400, 'must name another team than the one deleted'],
    ];
    for (const [fields, status, message] of refusals) {
      const r = await d.post('/dashboard/teams/growth/delete', fields);
      expect(r.status, JSON.stringify(fields)).toBe(status);
      expect(r.text, JSON.stringify(fields)).toContain(message);
      expect(r.text).toContain('<h1>Delete team growth?</h1>');
    }
    // Without the CSRF token: refused before anything is looked at.
    expect((await d.post('/dashboard/teams/growth/delete', { keys: 'unassign' }, { csrf: null })).status).toBe(403);
    expect(await s.app.backend.teams.get('growth')).not.toBeNull();
    expect((await s.app.backend.audit.list({ limit: 10, action: 'team.delete' })).entries).toEqual([]);

    const done = await d.post('/dashboard/teams/growth/delete', { keys: 'reassign', reassign: 'marketing' });
    expect([done.status, done.headers.location]).toEqual([303, '/dashboard/teams?done=deleted']);
    const after = await d.get('/dashboard/teams?done=deleted');
    expect(after.text).toContain('Team deleted.');
    expect(after.text).not.toContain('/dashboard/teams/growth"');
    expect(await s.app.backend.teams.get('growth')).toBeNull();
    expect([(await s.app.backend.keys.get(a.id))!.team, (await s.app.backend.keys.get(b.id))!.team]).toEqual(['marketing', 'marketing']);

    const actor = (await s.app.backend.audit.list({ limit: 1, action: 'team.delete' })).entries[0]!.actor;
    expect(actor).toMatch(/^dashboard:[0-9a-f]{8}$/);
    const entries = (await s.app.backend.audit.list({ limit: 3 })).entries;
    expect(entries.map((e) => [e.action, e.target, e.actor])).toEqual(expect.arrayContaining([
      ['team.delete', 'team:growth', actor],
      ['key.update', a.id, actor],
      ['key.update', b.id, actor],
    ]));
    expect(entries[0]).toMatchObject({ action: 'team.delete', before: { credits: '300/month', keys: expect.arrayContaining([a.id, b.id]) }, after: null });

    // Gone: its pages answer 404, and so does deleting it again.
    expect((await d.get('/dashboard/teams/growth/delete')).status).toBe(404);
    expect((await d.post('/dashboard/teams/growth/delete', {})).status).toBe(404);
  });

  it('takes the keys out of any team; a team without keys needs no choice; a name with markup is shown as text', async () => {
    s = await startStack({ config: { adminToken: TOKEN } });
    const d = await dashboardSession(s, TOKEN);
    const k = s.newKey({ name: 'solo-key', team: 'solo' });
    const only = await d.get('/dashboard/teams/solo/delete');
    // No other team to move them to: only "out of any team" can be chosen.
    expect(only.text).toMatch(/value="reassign" required disabled/);
    expect(only.text).toContain('There is no other team');
    const done = await d.post('/dashboard/teams/solo/delete', { keys: 'unassign' });
    expect(done.status).toBe(303);
    expect((await s.app.backend.keys.get(k.id))!.team).toBeNull();
    expect((await s.app.backend.audit.list({ limit: 5, action: 'key.update' })).entries[0]).toMatchObject({ target: k.id, before: { team: 'solo' }, after: { team: null } });

    const odd = '<b>"x"</b>';
    await s.app.backend.teams.set(odd, '10/day');
    const path = `/dashboard/teams/${encodeURIComponent(odd)}/delete`;
    const page = await d.get(path);
    expect(page.status).toBe(200);
    expect(page.text).not.toContain(odd);
    expect(page.text).toContain('&lt;b&gt;&quot;x&quot;&lt;/b&gt;');
    expect(page.text).toContain('It has no keys.');
    // A choice the form never offers is refused, not read as no choice (which deleted this team).
    const bogus = await d.post(path, { keys: 'bogus' });
    expect([bogus.status, bogus.text.includes('Where the keys go: choose')]).toEqual([400, true]);
    expect(await s.app.backend.teams.get(odd)).not.toBeNull();
    expect((await d.post(path, {})).status).toBe(303);
    expect(await s.app.backend.teams.get(odd)).toBeNull();
  });
});
