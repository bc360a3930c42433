import { describe, expect, it } from 'vitest';
import { PROVIDER_SCOPE } from '../../src/domain/credits.js';
import { failure } from '../../src/domain/errors.js';
import { teamScope } from '../../src/domain/teams.js';
import { Accounting } from '../../src/gateway/accounting.js';
import type { StorageBackend } from '../../src/store/backend.js';
import type { BackendFactory } from './backends.js';
import { eventually, row, T0, withHandle } from './support.js';

const accountingOf = (b: StorageBackend) => new Accounting(b.credits, b.ledger, { estimates: { profile: 3 }, providerBudgets: [] });
let seq = 0;
const req = () => `req_team_${++seq}`;

/** Teams: their budgets shared by their keys, reserved and charged like a key's, and audited. */
export function teamsContract(factory: BackendFactory): void {
  describe(`Teams contract: ${factory.name}`, () => {
    const h = withHandle(factory);
    const b = () => h().backend;

    it("set creates a team or changes its budget, audited as team.set in its transaction; a key's team without a row is listed too", async () => {
      await b().keys.create({ name: 'k', team: 'data' });
      expect(await b().teams.list()).toEqual([{ name: 'data', credits: null, createdAt: T0, updatedAt: T0 }]);
      h().clock.advance(1_000);
      expect(await b().teams.set('growth', '5000/month', 'cli:alice')).toEqual({ name: 'growth', credits: '5000/month', createdAt: T0 + 1_000, updatedAt: T0 + 1_000 });
      h().clock.advance(1_000);
      await b().teams.set('growth', '300/day,5000/month', 'admin-api');
      await b().teams.set('growth', '300/day,5000/month', 'admin-api'); // no change: no entry
      await b().teams.set('data', '10/day', 'admin-api');
      expect((await b().teams.get('growth'))!).toMatchObject({ credits: '300/day,5000/month', createdAt: T0 + 1_000, updatedAt: T0 + 2_000 });
      expect((await b().teams.list()).map((t) => [t.name, t.credits])).toEqual([['data', '10/day'], ['growth', '300/day,5000/month']]);
      expect(await b().teams.get('nobody')).toBeNull();
      const log = (await b().audit.list({ limit: 100, action: 'team.set' })).entries;
      expect(log.map((e) => [e.actor, e.target, e.before, e.after])).toEqual([
        ['admin-api', 'team:data', { credits: null }, { credits: '10/day' }],
        ['admin-api', 'team:growth', { credits: '5000/month' }, { credits: '300/day,5000/month' }],
        ['cli:alice', 'team:growth', null, { credits: '5000/month' }],
      ]);
    });

    it('delete refuses while the team has keys (revoked ones too), else deletes it, moving its keys first when told to, audited in its transaction', async () => {
      await b().teams.set('growth', '5000/month');
      await b().teams.set('data', null);
      const g1 = (await b().keys.create({ name: 'g1', team: 'growth' })).key.id;
      const g2 = (await b().keys.create({ name: 'g2', team: 'growth' })).key.id;
      await b().keys.revoke(g2);
      const [first, second] = [g1, g2].sort();
      expect(await b().teams.delete('growth', 'refuse', 'cli:alice')).toEqual({ deleted: false, reason: 'has_keys', keys: 2 });
      expect(await b().teams.delete('nobody', 'refuse', 'cli:alice')).toEqual({ deleted: false, reason: 'not_found' });
      expect(await b().teams.delete('growth', { to: 'nobody' }, 'cli:alice')).toEqual({ deleted: false, reason: 'no_target' });
      expect(await b().teams.delete('growth', { to: 'growth' }, 'cli:alice')).toEqual({ deleted: false, reason: 'no_target' });
      expect((await b().audit.list({ limit: 100, target: 'team:growth', action: 'team.delete' })).entries).toEqual([]);
      expect((await b().keys.get(g1))!.team).toBe('growth');

      const peer = await h().peer();
      const { secret } = await b().keys.create({ name: 'g3', team: 'growth' });
      expect((await peer.backend.keys.findBySecret(secret))!.key.teamCredits).toBe('5000/month');
      const g3 = (await b().keys.findBySecret(secret))!.key.id;
      h().clock.advance(5_000);
      const moved = await b().teams.delete('growth', { to: 'data' }, 'admin-api');
      expect(moved).toEqual({ deleted: true, team: { name: 'growth', credits: '5000/month', createdAt: T0, updatedAt: T0 }, keys: [first, second, g3].sort() });
      expect(await b().teams.get('growth')).toBeNull();
      expect((await b().teams.list()).map((t) => t.name)).toEqual(['data']);
      for (const id of [g1, g2, g3]) expect(await b().keys.get(id)).toMatchObject({ team: 'data', teamCredits: null, updatedAt: T0 + 5_000 });
      // Every process meets the keys' new team (and no team budget) at once here, within 2 s elsewhere.
      expect((await b().keys.findBySecret(secret))!.key).toMatchObject({ team: 'data', teamCredits: null });
      expect(await eventually(async () => (await peer.backend.keys.findBySecret(secret))!.key.team, (t) => t === 'data')).toBe('data');
      const log = (await b().audit.list({ limit: 100, actor: 'admin-api' })).entries;
      expect(log.map((e) => [e.action, e.target, e.before, e.after])).toEqual(
        expect.arrayContaining([
          ['team.delete', 'team:growth', { credits: '5000/month', keys: [first, second, g3].sort() }, null],
          ...[g1, g2, g3].map((id) => ['key.update', id, { team: 'growth' }, { team: 'data' }]),
        ]),
      );
      expect(log).toHaveLength(4);

      // To no team; a team with no keys goes at once; a team only keys named goes with them.
      await b().keys.create({ name: 'x', team: 'only named' });
      expect(await b().teams.delete('data', { to: null })).toMatchObject({ deleted: true, keys: [first, second, g3].sort() });
      expect((await b().keys.get(g1))!.team).toBeNull();
      expect(await b().teams.delete('only named', { to: null })).toMatchObject({ deleted: true, team: { name: 'only named', credits: null } });
      expect(await b().teams.list()).toEqual([]);
      await b().teams.set('empty', '1/day');
      expect(await b().teams.delete('empty', 'refuse')).toMatchObject({ deleted: true, keys: [] });
      expect(await b().teams.get('empty')).toBeNull();
    });

    it("a key is read with its team's budget; a change is seen at once here and by another process within 2 s", async () => {
      const peer = await h().peer();
      const { key, secret } = await b().keys.create({ name: 'k', team: 'growth' });
      expect((await peer.backend.keys.findBySecret(secret))!.key).toMatchObject({ team: 'growth', teamCredits: null });
      expect((await b().keys.findBySecret(secret))!.key.teamCredits).toBeNull();
      await b().teams.set('growth', '100/day');
      expect((await b().keys.findBySecret(secret))!.key.teamCredits).toBe('100/day');
      expect((await b().keys.get(key.id))!.teamCredits).toBe('100/day');
      const seen = await eventually(async () => (await peer.backend.keys.findBySecret(secret))!.key.teamCredits, (c) => c === '100/day');
      expect(seen).toBe('100/day');
      await b().keys.update(key.id, { team: null });
      expect((await b().keys.findBySecret(secret))!.key).toMatchObject({ team: null, teamCredits: null });
    });

    it("concurrent reservations of two keys of a team never oversubscribe the team's budget; the refusal names it; settling charges the team exactly", async () => {
      await b().teams.set('growth', '20/day');
      const ka = (await b().keys.create({ name: 'a', team: 'growth' })).secret;
      const kb = (await b().keys.create({ name: 'b', team: 'growth' })).secret;
      const keyA = (await b().keys.findBySecret(ka))!.key;
      const keyB = (await b().keys.findBySecret(kb))!.key;
      const acc = accountingOf(b());
      expect(acc.budgeted(keyA)).toBe(true);
      const ids = Array.from({ length: 30 }, req);
      const keyOf = (i: number) => (i % 2 ? keyB : keyA);
      const answers = await Promise.all(ids.map((id, i) => acc.reserve(id, keyOf(i), 'profile', T0)));
      const admitted = ids.flatMap((id, i) => (answers[i] === null ? [{ id, key: keyOf(i) }] : []));
      expect(admitted).toHaveLength(6);
      const refused = answers.find((a) => a !== null)!;
      expect(refused.code).toBe(failure('CREDIT_LIMIT_EXCEEDED').code);
      expect(refused.message).toContain("team 'growth'");
      expect(await b().credits.reserved(teamScope('growth'))).toBe(18);
      // Each settles at 2 credits: 12 used, the team's usage exact, each key's its own.
      for (const { id, key } of admitted) await b().ledger.record(row(key.id, T0, { requestId: id, cache: 'MISS', credits: 2 }));
      expect(await b().credits.reserved(teamScope('growth'))).toBe(0);
      expect(await b().credits.used(teamScope('growth'), 'day', T0)).toBe(12);
      expect((await b().credits.used(keyA.id, 'day', T0)) + (await b().credits.used(keyB.id, 'day', T0))).toBe(12);
      expect(await b().credits.used(PROVIDER_SCOPE, 'day', T0)).toBe(12);
      expect(await acc.teamStates('growth', '20/day', T0)).toMatchObject([{ used: 12, reserved: 0 }]);
      // The headers of either key tell what the team budget leaves: 8 credits, a call of 3 fits.
      expect(await acc.headers(keyA, 'profile', T0)).toMatchObject({ 'x-credits-remaining': '8', 'x-credits-used': '12' });
    });

    it("a crashed process's reservations are charged to its keys' team too", async () => {
      await b().teams.set('growth', '100/day');
      const { secret } = await b().keys.create({ name: 'a', team: 'growth' });
      const key = (await b().keys.findBySecret(secret))!.key;
      expect(await accountingOf(b()).reserve(req(), key, 'profile', T0)).toBeNull();
      await h().crash();
      const next = (await h().peer()).backend;
      await next.ledger.recoverAbandoned();
      expect(await next.credits.used(teamScope('growth'), 'day', T0)).toBe(3);
      expect(await next.credits.used(key.id, 'day', T0)).toBe(3);
    });

    it("a call in flight when its key moves to another team is charged to the team it reserved against, not the new one", async () => {
      await b().teams.set('old', '30/day');
      await b().teams.set('new', '6/day');
      const { secret } = await b().keys.create({ name: 'mover', team: 'old' });
      const key = (await b().keys.findBySecret(secret))!.key;
      const acc = accountingOf(b());
      const id = req();
      expect(await acc.reserve(id, key, 'profile', T0)).toBeNull();
      await b().keys.update(key.id, { team: 'new' });
      expect((await b().keys.findBySecret(secret))!.key.team).toBe('new');
      await b().ledger.record(row(key.id, T0, { requestId: id, cache: 'MISS', credits: 3 }));
      expect(await b().credits.used(teamScope('old'), 'day', T0)).toBe(3);
      expect(await b().credits.reserved(teamScope('old'))).toBe(0);
      expect(await b().credits.used(teamScope('new'), 'day', T0)).toBe(0);
      expect(await b().credits.used(key.id, 'day', T0)).toBe(3);
      expect(await b().credits.used(PROVIDER_SCOPE, 'day', T0)).toBe(3);
    });

    it("a crashed process's call whose key moved to another team meanwhile is charged to the team it reserved against", async () => {
      await b().teams.set('old', '30/day');
      const { secret } = await b().keys.create({ name: 'mover', team: 'old' });
      const key = (await b().keys.findBySecret(secret))!.key;
      expect(await accountingOf(b()).reserve(req(), key, 'profile', T0)).toBeNull();
      await b().keys.update(key.id, { team: 'new' });
      await h().crash();
      const next = (await h().peer()).backend;
      await next.ledger.recoverAbandoned();
      expect(await next.credits.used(teamScope('old'), 'day', T0)).toBe(3);
      expect(await next.credits.used(teamScope('new'), 'day', T0)).toBe(0);
      expect(await next.credits.used(key.id, 'day', T0)).toBe(3);
    });
  });
}
