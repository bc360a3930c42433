import { describe, expect, it } from 'vitest';
import { newSessionId, sessionIdHash } from '../../src/domain/sessions.js';
import { tokenDigest } from '../../src/domain/keys.js';
import type { BackendFactory } from './backends.js';
import { HOUR, T0, withHandle } from './support.js';

const hashOf = (id: string, token = 'admin-token-0123456789') => sessionIdHash(id, tokenDigest(token));

/** Dashboard sessions: kept by their id's hash until they expire, seen and ended by every process of a storage. */
export function sessionsContract(factory: BackendFactory): void {
  describe(`Sessions contract: ${factory.name}`, () => {
    const h = withHandle(factory);
    const b = () => h().backend;

    it('a session is found by its hash until it expires, never after; another token makes another hash', async () => {
      const id = newSessionId();
      const s = { idHash: hashOf(id), createdAt: T0, expiresAt: T0 + 12 * HOUR };
      await b().sessions.create(s);
      expect(await b().sessions.get(s.idHash, T0 + HOUR)).toEqual(s);
      expect(await b().sessions.get(s.idHash, T0 + 12 * HOUR - 1)).toEqual(s);
      expect(await b().sessions.get(s.idHash, T0 + 12 * HOUR)).toBeNull();
      expect(await b().sessions.get(hashOf(id, 'another-admin-token-0000'), T0 + HOUR)).toBeNull();
      expect(await b().sessions.get(hashOf(newSessionId()), T0 + HOUR)).toBeNull();
    });

    it('a session made by one process is seen by another, and revoked by either for both', async () => {
      const peer = await h().peer();
      const s = { idHash: hashOf(newSessionId()), createdAt: T0, expiresAt: T0 + HOUR };
      await b().sessions.create(s);
      expect(await peer.backend.sessions.get(s.idHash, T0)).toEqual(s);
      expect(await peer.backend.sessions.revoke(s.idHash)).toBe(true);
      expect(await b().sessions.get(s.idHash, T0)).toBeNull();
      expect(await b().sessions.revoke(s.idHash)).toBe(false);
    });

    it('making a session deletes the expired ones and keeps the live ones', async () => {
      const old = { idHash: hashOf(newSessionId()), createdAt: T0, expiresAt: T0 + HOUR };
      const live = { idHash: hashOf(newSessionId()), createdAt: T0, expiresAt: T0 + 5 * HOUR };
      await b().sessions.create(old);
      await b().sessions.create(live);
      const next = { idHash: hashOf(newSessionId()), createdAt: T0 + 2 * HOUR, expiresAt: T0 + 3 * HOUR };
      await b().sessions.create(next);
      // Gone, not merely expired: revoking it finds nothing.
      expect(await b().sessions.revoke(old.idHash)).toBe(false);
      expect(await b().sessions.get(live.idHash, T0 + 2 * HOUR)).toEqual(live);
      expect(await b().sessions.get(next.idHash, T0 + 2 * HOUR)).toEqual(next);
    });
  });
}
