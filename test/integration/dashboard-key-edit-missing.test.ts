import { describe, expect, it } from 'vitest';
import { dashboardStack } from '../helpers/dashboard.js';

/*
 * The key edit form always sends its text fields, empty when cleared. A post that left one out
 * (a script's, a form cut short) was read as that field cleared: the key lost its rate limit,
 * its credit limit, its team (and so the team's budget) or its expiry. A missing field is now
 * refused, naming it, and nothing changes; an empty one still clears it.
 */
const TOKEN = 'admin-token-for-dashboard-key-edit-0';
const on = dashboardStack(TOKEN);
const SCOPES = { endpoints: ['profile'], strategies: ['cached'] };

describe('editing a key from the dashboard', () => {
  it('a post without rate, credits, team or expires_at is a 400 naming the field, and the key keeps its limits', async () => {
    expect((await on.d.post('/dashboard/teams', { name: 'data', credits: '1000/month' })).status).toBe(303);
    const expiresAt = Date.now() + 86_400_000;
    const { key } = await on.s.app.backend.keys.create({ name: 'limited', team: 'data', rate: '5/second', credits: '100/day', expiresAt, ...SCOPES });
    const full = { name: 'limited', team: 'data', rate: '5/second', credits: '100/day', expires_at: new Date(expiresAt).toISOString(), ...SCOPES };
    for (const missing of ['rate', 'credits', 'team', 'expires_at', 'name'] as const) {
      const { [missing]: _left, ...fields } = full;
      const r = await on.d.post(`/dashboard/keys/${key.id}`, fields);
      expect([r.status, r.text.includes(missing)], `${missing}: ${r.text.slice(0, 200)}`).toEqual([400, true]);
    }
    const after = (await on.s.app.backend.keys.get(key.id))!;
    expect([after.name, after.team, after.rate, after.credits, after.expiresAt]).toEqual(['limited', 'data', '5/second', '100/day', expiresAt]);
    // Sent empty, as the form sends a cleared field: cleared.
    const cleared = await on.d.post(`/dashboard/keys/${key.id}`, { ...full, rate: '' });
    expect(cleared.status, cleared.text.slice(0, 200)).toBe(303);
    expect((await on.s.app.backend.keys.get(key.id))!.rate).toBeNull();
  });
});
