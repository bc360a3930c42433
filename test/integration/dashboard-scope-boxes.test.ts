import { describe, expect, it } from 'vitest';
import { dashboardStack } from '../helpers/dashboard.js';

/*
 * The key form's scope checkboxes: every box ticked means "all" (no list). The form decided that
 * by counting the values sent, so a form with one endpoint repeated five times (as many as there
 * are boxes), or four known values and an unknown one, made a key unrestricted instead of scoped
 * to what was sent, or refused naming the unknown value.
 */
const TOKEN = 'admin-token-for-dashboard-scope-boxes-0';
const ENDPOINTS = ['profile', 'profile_posts', 'company', 'company_posts', 'passthrough'];
const STRATEGIES = ['cached', 'fetch', 'strict', 'besteffort'];
const on = dashboardStack(TOKEN);

const keyNamed = async (name: string) => (await on.s.app.backend.keys.list()).find((k) => k.name === name);

describe('the key form: a scope is "all" only when every box is ticked', () => {
  it('one endpoint and one strategy, each sent as many times as there are boxes: a key scoped to them (was unrestricted)', async () => {
    const r = await on.d.post('/dashboard/keys', { name: 'repeated', endpoints: Array(ENDPOINTS.length).fill('profile'), strategies: Array(STRATEGIES.length).fill('cached') });
    expect(r.status, r.text.slice(0, 300)).toBe(201);
    expect(await keyNamed('repeated')).toMatchObject({ endpoints: ['profile'], strategies: ['cached'] });
  });

  it('an unknown value among as many values as boxes: refused naming it (was an unrestricted key)', async () => {
    const r = await on.d.post('/dashboard/keys', { name: 'unknown', endpoints: [...ENDPOINTS.slice(0, -1), 'everything'], strategies: ['cached'] });
    expect(r.status).toBe(400);
    expect(r.text).toContain('unknown value &#39;everything&#39;');
    expect(await keyNamed('unknown')).toBeUndefined();
  });

  it('editing a scoped key with a repeated box keeps it scoped; every box ticked (even twice) is all', async () => {
    const { key } = await on.s.app.backend.keys.create({ name: 'edited', endpoints: ['company'], strategies: ['cached'] });
    const edit = (endpoints: string[]) => on.d.post(`/dashboard/keys/${key.id}`, { name: 'edited', team: '', rate: '', credits: '', endpoints, strategies: ['cached'], expires_at: '' });
    expect((await edit(Array(ENDPOINTS.length).fill('company'))).status).toBe(303);
    expect((await on.s.app.backend.keys.get(key.id))?.endpoints).toEqual(['company']);
    expect((await edit([...ENDPOINTS, 'profile'])).status).toBe(303);
    expect((await on.s.app.backend.keys.get(key.id))?.endpoints).toBeNull();
  });
});
