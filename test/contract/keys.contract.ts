import { describe, expect, it } from 'vitest';
import { hashSecret, type NewKey } from '../../src/domain/keys.js';
import type { BackendFactory } from './backends.js';
import { eventually, T0, withHandle } from './support.js';

const FULL: NewKey = {
  name: 'team-a',
  team: 'ops@example.com',
  expiresAt: T0 + 30 * 86_400_000,
  rate: '10/second,1000/day',
  credits: '50/day,1000/month',
  endpoints: ['profile', 'company'],
  strategies: ['cached', 'fetch'],
  cacheIsolated: true,
};

/** Keys (and LastUsed, which writes into them): what admission and the admin API rely on. */
export function keysContract(factory: BackendFactory): void {
  describe(`Keys contract: ${factory.name}`, () => {
    const h = withHandle(factory);
    const keys = () => h().backend.keys;

    it('create returns a secret that findBySecret finds; no field of the key carries the secret or its hash', async () => {
      const { key, secret } = await keys().create(FULL);
      expect(key).toMatchObject({ ...FULL, createdAt: T0, updatedAt: T0, revokedAt: null, lastUsedAt: null, previousExpiresAt: null });
      expect(key.id).toMatch(/^key_/);
      expect(secret.startsWith(key.prefix) && key.prefix.length < secret.length).toBe(true);
      const found = await keys().findBySecret(secret);
      expect(found).toMatchObject({ key: { id: key.id, name: 'team-a' }, previous: false });
      for (const seen of [await keys().get(key.id), await keys().list(), found]) {
        const text = JSON.stringify(seen);
        expect(text).not.toContain(secret);
        expect(text).not.toContain(hashSecret(secret));
      }
    });

    it('a minimal key has nulls and defaults; unknown and malformed secrets find nothing', async () => {
      const { key } = await keys().create({ name: 'bare' });
      expect(key).toMatchObject({ team: null, teamCredits: null, expiresAt: null, rate: null, credits: null, endpoints: null, strategies: null, cacheIsolated: false });
      expect(await keys().findBySecret('tg_' + 'x'.repeat(40))).toBeNull();
      expect(await keys().findBySecret('')).toBeNull();
      expect(await keys().get('key_missing')).toBeNull();
    });

    it('rotation: the new secret finds the key; the old one too, as previous, until a second rotation', async () => {
      const { key, secret: first } = await keys().create({ name: 'rot' });
      h().clock.advance(1_000);
      const r1 = (await keys().rotate(key.id, 60_000))!;
      expect(r1.key).toMatchObject({ id: key.id, previousExpiresAt: T0 + 1_000 + 60_000, updatedAt: T0 + 1_000 });
      expect(r1.secret).not.toBe(first);
      expect(await keys().findBySecret(r1.secret)).toMatchObject({ key: { id: key.id }, previous: false });
      expect(await keys().findBySecret(first)).toMatchObject({ key: { id: key.id, previousExpiresAt: T0 + 61_000 }, previous: true });
      const r2 = (await keys().rotate(key.id, 5_000))!;
      expect(await keys().findBySecret(first)).toBeNull();
      expect(await keys().findBySecret(r1.secret)).toMatchObject({ key: { id: key.id }, previous: true });
      expect(await keys().findBySecret(r2.secret)).toMatchObject({ previous: false });
      expect(await keys().rotate('key_missing', 1_000)).toBeNull();
    });

    it('revoke: true once, false after and for a missing key; the key is still found, revoked, and cannot be rotated', async () => {
      const { key, secret } = await keys().create({ name: 'rev' });
      await keys().findBySecret(secret); // remembered, if the backend remembers
      h().clock.advance(5);
      expect(await keys().revoke(key.id)).toBe(true);
      expect(await keys().revoke(key.id)).toBe(false);
      expect(await keys().revoke('key_missing')).toBe(false);
      expect(await keys().findBySecret(secret)).toMatchObject({ key: { id: key.id, revokedAt: T0 + 5 } });
      expect(await keys().get(key.id)).toMatchObject({ revokedAt: T0 + 5, updatedAt: T0 + 5 });
      expect(await keys().rotate(key.id, 1_000)).toBeNull();
    });

    it('update: an absent field stays, null clears, a value replaces; seen by findBySecret at once; null for a missing key', async () => {
      const { key, secret } = await keys().create(FULL);
      await keys().findBySecret(secret);
      h().clock.advance(7);
      const updated = await keys().update(key.id, { team: null, rate: '5/second', endpoints: null, cacheIsolated: false });
      const expected = { ...FULL, team: null, rate: '5/second', endpoints: null, cacheIsolated: false, createdAt: T0, updatedAt: T0 + 7 };
      expect(updated).toMatchObject(expected);
      expect(await keys().get(key.id)).toMatchObject(expected);
      expect((await keys().findBySecret(secret))!.key).toMatchObject(expected);
      expect(await keys().update(key.id, {})).toMatchObject({ ...expected });
      expect(await keys().update('key_missing', { name: 'x' })).toBeNull();
    });

    it('list: every key, revoked ones too, ordered by creation time then id', async () => {
      h().clock.set(T0 + 10);
      const late = await keys().create({ name: 'late' });
      h().clock.set(T0);
      const early = [await keys().create({ name: 'e1' }), await keys().create({ name: 'e2' }), await keys().create({ name: 'e3' })];
      await keys().revoke(early[1]!.key.id);
      const ids = early.map((k) => k.key.id).sort();
      expect((await keys().list()).map((k) => k.id)).toEqual([...ids, late.key.id]);
    });

    it('another process: a key it creates is found, and a key it revokes or changes is seen so, within 2 s', async () => {
      const other = await h().peer();
      const made = await other.backend.keys.create({ name: 'elsewhere' });
      const found = await eventually(() => keys().findBySecret(made.secret), (f) => f !== null);
      expect(found).toMatchObject({ key: { id: made.key.id, revokedAt: null } });
      await other.backend.keys.update(made.key.id, { rate: '1/second' });
      expect(await eventually(() => keys().findBySecret(made.secret), (f) => f?.key.rate === '1/second')).toMatchObject({ key: { rate: '1/second' } });
      await other.backend.keys.revoke(made.key.id);
      expect(await eventually(() => keys().findBySecret(made.secret), (f) => f?.key.revokedAt !== null)).toMatchObject({ key: { revokedAt: T0 } });
      expect(await keys().rotate(made.key.id, 0)).toBeNull();
    });

    it('LastUsed: noted touches are written by flush, the latest per key winning', async () => {
      const a = await keys().create({ name: 'a' });
      const b = await keys().create({ name: 'b' });
      const { lastUsed } = h().backend;
      lastUsed.touch(a.key.id, T0 + 1);
      lastUsed.touch(a.key.id, T0 + 3);
      lastUsed.touch(b.key.id, T0 + 2);
      await lastUsed.flush();
      await lastUsed.flush(); // nothing noted: nothing to do
      expect((await keys().get(a.key.id))!.lastUsedAt).toBe(T0 + 3);
      const other = await h().peer();
      expect((await other.backend.keys.get(b.key.id))!.lastUsedAt).toBe(T0 + 2);
    });
  });
}
