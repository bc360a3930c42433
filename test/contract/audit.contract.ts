import { describe, expect, it } from 'vitest';
import type { AuditEntry, AuditQuery } from '../../src/domain/audit.js';
import { hashSecret, type NewKey } from '../../src/domain/keys.js';
import type { BackendFactory } from './backends.js';
import { eventually, HOUR, T0, withHandle } from './support.js';

const FULL: NewKey = { name: 'team-a', team: 'ops', rate: '10/second', credits: '1000/month', endpoints: ['profile'], strategies: null, cacheIsolated: false };

/** The audit log: what key writes with an actor append, and how the log is read. */
export function auditContract(factory: BackendFactory): void {
  describe(`AuditLog contract: ${factory.name}`, () => {
    const h = withHandle(factory);
    const b = () => h().backend;
    const all = async (q: Partial<AuditQuery> = {}) => (await b().audit.list({ limit: 1000, ...q })).entries;

    it('each key write with an actor appends one entry: the whole key when created, only the changed fields after; never a secret or its hash', async () => {
      const { key, secret } = await b().keys.create(FULL, 'cli:alice');
      h().clock.advance(1_000);
      await b().keys.update(key.id, { rate: '5/second', team: null, name: 'team-a' }, 'admin-api');
      h().clock.advance(1_000);
      const rotated = (await b().keys.rotate(key.id, HOUR, 'admin-api'))!;
      h().clock.advance(1_000);
      expect(await b().keys.revoke(key.id, 'cli:bob')).toBe(true);

      const log = await all();
      expect(log.map((e) => [e.action, e.actor, e.target, e.ts])).toEqual([
        ['key.revoke', 'cli:bob', key.id, T0 + 3_000],
        ['key.rotate', 'admin-api', key.id, T0 + 2_000],
        ['key.update', 'admin-api', key.id, T0 + 1_000],
        ['key.create', 'cli:alice', key.id, T0],
      ]);
      const [revoke, rotate, update, create] = log as [AuditEntry, AuditEntry, AuditEntry, AuditEntry];
      expect(create.before).toBeNull();
      expect(create.after).toEqual({
        name: 'team-a',
        team: 'ops',
        prefix: key.prefix,
        rate: '10/second',
        credits: '1000/month',
        endpoints: ['profile'],
        strategies: null,
        expires_at: null,
        cache_isolated: false,
        revoked_at: null,
        previous_secret_expires_at: null,
      });
      // The name was given but not changed: only what moved is shown.
      expect(update.before).toEqual({ team: 'ops', rate: '10/second' });
      expect(update.after).toEqual({ team: null, rate: '5/second' });
      expect(rotate.before).toEqual({ prefix: key.prefix, previous_secret_expires_at: null });
      expect(rotate.after).toEqual({ prefix: rotated.key.prefix, previous_secret_expires_at: new Date(T0 + 2_000 + HOUR).toISOString() });
      expect(revoke).toMatchObject({ before: { revoked_at: null }, after: { revoked_at: new Date(T0 + 3_000).toISOString() } });
      expect(create.id).toMatch(/^aud_[0-9A-Z]{26}$/);
      const text = JSON.stringify(log);
      for (const s of [secret, rotated.secret]) {
        expect(text).not.toContain(s);
        expect(text).not.toContain(hashSecret(s));
      }
    });

    it('writes that change nothing, and writes without an actor, append nothing', async () => {
      const { key } = await b().keys.create({ name: 'quiet' });
      await b().keys.update(key.id, { rate: '1/second' });
      await b().keys.revoke(key.id);
      expect(await all()).toEqual([]);
      expect(await b().keys.revoke(key.id, 'admin-api')).toBe(false);
      expect(await b().keys.rotate(key.id, 0, 'admin-api')).toBeNull();
      expect(await b().keys.update('key_missing', { name: 'x' }, 'admin-api')).toBeNull();
      expect(await b().keys.revoke('key_missing', 'admin-api')).toBe(false);
      expect(await all()).toEqual([]);
    });

    it('append stores an entry as given; list filters by time, actor (or its kind), action and target', async () => {
      const purge = await b().audit.append({ actor: 'admin-api', action: 'cache.purge', target: 'cache:all', before: null, after: { purged: 3 } });
      expect(purge).toMatchObject({ ts: T0, actor: 'admin-api', action: 'cache.purge', target: 'cache:all', before: null, after: { purged: 3 } });
      h().clock.advance(HOUR);
      const { key } = await b().keys.create({ name: 'k' }, 'cli:alice');
      h().clock.advance(HOUR);
      await b().keys.revoke(key.id, 'cli');
      h().clock.advance(HOUR);
      await b().audit.append({ actor: 'client', action: 'cache.purge', target: 'cache:endpoint=profile', before: null, after: { purged: 0 } });

      const actions = async (q: Partial<AuditQuery>) => (await all(q)).map((e) => `${e.actor} ${e.action}`);
      expect(await all()).toContainEqual(purge);
      // `cli` is every command's (cli and cli:<user>), not `client`'s.
      expect(await actions({ actor: 'cli' })).toEqual(['cli key.revoke', 'cli:alice key.create']);
      expect(await actions({ actor: 'cli:alice' })).toEqual(['cli:alice key.create']);
      expect(await actions({ action: 'cache.purge' })).toEqual(['client cache.purge', 'admin-api cache.purge']);
      expect(await actions({ target: key.id })).toEqual(['cli key.revoke', 'cli:alice key.create']);
      expect(await actions({ from: T0 + HOUR, to: T0 + 3 * HOUR })).toEqual(['cli key.revoke', 'cli:alice key.create']);
      expect(await actions({ from: T0 + 3 * HOUR + 1 })).toEqual([]);
      expect(await actions({ actor: 'cli', action: 'key.create', to: T0 + HOUR })).toEqual([]);
    });

    it('pages newest first through entries of the same millisecond, each once, the last page without a cursor', async () => {
      for (let i = 0; i < 7; i++) {
        await b().audit.append({ actor: 'admin-api', action: 'cache.purge', target: `cache:n${i}`, before: null, after: { purged: i } });
        if (i % 3 === 2) h().clock.advance(1);
      }
      const seen: string[] = [];
      let page = await b().audit.list({ limit: 3 });
      for (;;) {
        seen.push(...page.entries.map((e) => e.target));
        if (!page.next) break;
        page = await b().audit.list({ limit: 3, after: page.next });
      }
      expect(seen).toEqual(['cache:n6', 'cache:n5', 'cache:n4', 'cache:n3', 'cache:n2', 'cache:n1', 'cache:n0']);
      // Exactly a page's worth left: the last page says so.
      expect((await b().audit.list({ limit: 7 })).next).toBeNull();
    });

    it('entries written through one process are read through another', async () => {
      const { key } = await b().keys.create({ name: 'shared' }, 'admin-api');
      const peer = await h().peer();
      await peer.backend.keys.update(key.id, { credits: '5/day' }, 'cli:carol');
      const seen = await eventually(() => all(), (l) => l.length === 2);
      expect(seen.map((e) => `${e.actor} ${e.action}`)).toEqual(['cli:carol key.update', 'admin-api key.create']);
      expect((await peer.backend.audit.list({ limit: 10 })).entries).toEqual(seen);
    });
  });
}
