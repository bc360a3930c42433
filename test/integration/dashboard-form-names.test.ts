import { describe, expect, it } from 'vitest';
import { dashboardStack } from '../helpers/dashboard.js';

/*
 * A dashboard form field named `__proto__` (or after any Object.prototype member): the form was
 * read into a plain object, where `__proto__` set the object's prototype to an array, so every
 * field the form did not send was read from Array.prototype. Deleting a team then met
 * `keys` = Array.prototype.keys, a function, and answered 500. A field's name is the sender's
 * choice; it must never change what the other fields read.
 */
const TOKEN = 'admin-token-for-dashboard-form-names-0';
const on = dashboardStack(TOKEN);

const raw = (fields: string) => `${fields}&_csrf=${encodeURIComponent(on.d.csrf)}`;

describe('a dashboard form with a field named after an object member', () => {
  it('deleting a team without keys: deleted as without that field (was 500)', async () => {
    expect((await on.d.post('/dashboard/teams', { name: 'proto-team', credits: '' })).status).toBe(303);
    const r = await on.d.postRaw('/dashboard/teams/proto-team/delete', raw('__proto__=x'));
    expect([r.status, r.headers.location], r.text).toEqual([303, '/dashboard/teams?done=deleted']);
    expect(await on.s.app.backend.teams.list()).toEqual([]);
  });

  it('every form: answered as without those fields, never a 500', async () => {
    const key = await on.s.app.backend.keys.create({ name: 'proto-key' });
    // Given once each: a field given twice is refused as such (dashboard-query-strict), `__proto__` too.
    const extra = '__proto__=a&constructor=c&toString=d&hasOwnProperty=e';
    const cases: Array<[string, string, number]> = [
      ['/dashboard/teams', 'name=proto-2&credits=', 303],
      ['/dashboard/teams/proto-2/delete', 'keys=unassign', 303],
      ['/dashboard/keys', 'name=proto-new&endpoints=profile&strategies=cached', 201],
      [`/dashboard/keys/${key.key.id}`, 'name=proto-renamed&team=&rate=&credits=&expires_at=&endpoints=profile&strategies=cached', 303],
      [`/dashboard/keys/${key.key.id}/rotate`, 'overlap=1h', 200],
      ['/dashboard/cache/purge', 'by=all', 303],
      [`/dashboard/keys/${key.key.id}/revoke`, '', 303],
    ];
    for (const [path, fields, status] of cases) {
      const r = await on.d.postRaw(path, raw(`${extra}&${fields}`));
      expect(r.status, `${path} ${r.text.slice(0, 300)}`).toBe(status);
    }
    expect((await on.s.app.backend.keys.get(key.key.id))?.name).toBe('proto-renamed');
    // Twice (an array, which as the prototype made every absent field an Array.prototype member): 400, not 500.
    const twice = await on.d.postRaw('/dashboard/teams', raw('__proto__=a&__proto__=b&name=proto-3&credits='));
    expect(twice.status).toBe(400);
    expect(on.s.logs.filter((l) => l.includes('"level":50'))).toEqual([]);
  });
});
