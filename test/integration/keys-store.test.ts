import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { authenticate } from '../../src/gateway/auth.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { outlastLooks } from '../../src/store/sqlite/data-version.js';
import { KeyStore } from '../../src/store/sqlite/keys.js';
import { MAIN_MIGRATIONS } from '../../src/store/sqlite/schema.js';
import { keyRefusal, type FoundKey } from '../../src/domain/keys.js';

/**
 * KeyStore.findBySecret answers from memory. These tests hold it to answering exactly what
 * an uncached read would: `server` is the gateway's store, `cli` a second connection to the
 * same file standing in for `tollgate keys …` in another process.
 */
let dir: string;
let serverDb: DB;
let cliDb: DB;
let clock: FakeClock;
let server: KeyStore;
let cli: KeyStore;

/** What findBySecret would answer without a cache: a store on a connection of its own, used once. */
function uncached(secret: string): FoundKey | null {
  const db = openDatabase(join(dir, 'tollgate.db'), MAIN_MIGRATIONS);
  try {
    return new KeyStore(db, clock).findBySecret(secret);
  } finally {
    db.close();
  }
}

/** The remembered-key map's size: the only way to see that misses are not kept. */
const remembered = (s: KeyStore) => (s as unknown as { found: Map<string, unknown> }).found.size;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-keys-'));
  serverDb = openDatabase(join(dir, 'tollgate.db'), MAIN_MIGRATIONS);
  cliDb = openDatabase(join(dir, 'tollgate.db'), MAIN_MIGRATIONS);
  clock = new FakeClock();
  server = new KeyStore(serverDb, clock);
  cli = new KeyStore(cliDb, clock);
});

afterEach(() => {
  serverDb.close();
  cliDb.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Another connection's commits are looked for once a look is LOOK_INTERVAL_MS old (DataVersionWatch), as the CLI waits before it returns. */
const afterCliReturned = () => outlastLooks();

describe('KeyStore.findBySecret cache', () => {
  it('a repeat lookup is answered from memory with what an uncached read returns', () => {
    const { key, secret } = cli.create({
      name: 'team',
      team: 'ops',
      rate: '10/second',
      credits: '100/day',
      endpoints: ['profile', 'company'],
      strategies: ['cacheonly'],
      cacheIsolated: true,
      expiresAt: clock.now() + 3_600_000,
    });
    const first = server.findBySecret(secret)!;
    const second = server.findBySecret(secret)!;
    // The same object: no row was read or parsed the second time.
    expect(second).toBe(first);
    expect(second).toEqual(uncached(secret));
    expect(second).toEqual({ key, previous: false });
    expect(Object.isFrozen(second.key) && Object.isFrozen(second.key.endpoints)).toBe(true);
  });

  it('sees a revoke made through another connection on the next lookup', async () => {
    const { key, secret } = cli.create({ name: 'team' });
    expect(keyRefusal(server.findBySecret(secret)!.key, clock.now())).toBeNull();
    clock.advance(10);
    expect(cli.revoke(key.id)).toBe(true);
    await afterCliReturned();
    const after = server.findBySecret(secret)!;
    expect(after.key.revokedAt).toBe(clock.now());
    expect(keyRefusal(after.key, clock.now())?.code).toBe('API_KEY_REVOKED');
    expect(after).toEqual(uncached(secret));
  });

  it('sees an update made through another connection on the next lookup', async () => {
    const { key, secret } = cli.create({ name: 'team', rate: '10/second', endpoints: ['company'] });
    server.findBySecret(secret);
    cli.update(key.id, { name: 'renamed', rate: null, endpoints: ['profile'], strategies: ['besteffort'], expiresAt: clock.now() + 5 });
    await afterCliReturned();
    const after = server.findBySecret(secret)!.key;
    expect(after).toMatchObject({ name: 'renamed', rate: null, endpoints: ['profile'], strategies: ['besteffort'], expiresAt: clock.now() + 5 });
    expect(server.findBySecret(secret)).toEqual(uncached(secret));
  });

  it('sees a rotation made through another connection; the old secret is found as previous during the overlap', async () => {
    const { key, secret: old } = cli.create({ name: 'team' });
    expect(server.findBySecret(old)!.previous).toBe(false);
    const rotated = cli.rotate(key.id, 60_000)!;
    await afterCliReturned();
    const viaOld = server.findBySecret(old)!;
    const viaNew = server.findBySecret(rotated.secret)!;
    expect(viaOld.previous).toBe(true);
    expect(viaNew.previous).toBe(false);
    expect(viaOld.key).toEqual(viaNew.key);
    expect(viaOld.key.previousExpiresAt).toBe(clock.now() + 60_000);
    expect(keyRefusal(viaOld.key, clock.now(), viaOld.previous)).toBeNull();
    // The overlap ends by the clock, with both lookups still remembered.
    clock.advance(60_000);
    expect(server.findBySecret(old)).toBe(viaOld);
    expect(keyRefusal(viaOld.key, clock.now(), true)?.code).toBe('API_KEY_EXPIRED');
    expect(keyRefusal(viaNew.key, clock.now(), false)).toBeNull();
    // A second rotation forgets the first secret altogether.
    const again = cli.rotate(key.id, 60_000)!;
    await afterCliReturned();
    expect(server.findBySecret(old)).toBeNull();
    expect(server.findBySecret(rotated.secret)!.previous).toBe(true);
    expect(server.findBySecret(again.secret)).toEqual(uncached(again.secret));
  });

  it("sees the store's own writes at once (revoke, update, rotate)", () => {
    const { key, secret } = server.create({ name: 'team' });
    server.findBySecret(secret);
    server.update(key.id, { rate: '1/second' });
    expect(server.findBySecret(secret)!.key.rate).toBe('1/second');
    const rotated = server.rotate(key.id, 1_000)!;
    expect(server.findBySecret(secret)!.previous).toBe(true);
    expect(server.findBySecret(rotated.secret)!.previous).toBe(false);
    server.revoke(key.id);
    expect(server.findBySecret(rotated.secret)!.key.revokedAt).toBe(clock.now());
    expect(server.findBySecret(secret)!.key.revokedAt).toBe(clock.now());
  });

  it('sees writes made through another KeyStore on the same connection', () => {
    // data_version does not move for a connection's own commits; the stores must tell each other.
    const admin = new KeyStore(serverDb, clock);
    const { key, secret } = admin.create({ name: 'team' });
    server.findBySecret(secret);
    admin.revoke(key.id);
    expect(server.findBySecret(secret)!.key.revokedAt).not.toBeNull();
  });

  it('does not remember a key read inside a transaction that is rolled back', () => {
    const { key, secret } = server.create({ name: 'team' });
    server.findBySecret(secret);
    expect(() =>
      serverDb.transaction(() => {
        server.revoke(key.id);
        expect(server.findBySecret(secret)!.key.revokedAt).not.toBeNull();
        throw new Error('roll back');
      })(),
    ).toThrow('roll back');
    expect(server.findBySecret(secret)!.key.revokedAt).toBeNull();
  });

  it('touch (last used, batched) does not drop remembered keys; get() reads it fresh', () => {
    const { key, secret } = server.create({ name: 'team' });
    const found = server.findBySecret(secret)!;
    server.touch(key.id, clock.now() + 1_000);
    expect(server.findBySecret(secret)).toBe(found);
    expect(server.get(key.id)!.lastUsedAt).toBe(clock.now() + 1_000);
    expect(server.list()[0]!.lastUsedAt).toBe(clock.now() + 1_000);
  });

  it('a remembered key still expires on time (fake clock)', () => {
    const { key, secret } = server.create({ name: 'team', expiresAt: clock.now() + 1_000 });
    const header = `Bearer ${secret}`;
    const before = authenticate(header, server, clock.now());
    expect('refusal' in before).toBe(false);
    clock.advance(999);
    expect('refusal' in authenticate(header, server, clock.now())).toBe(false);
    clock.advance(1);
    expect(authenticate(header, server, clock.now())).toMatchObject({ refusal: { code: 'API_KEY_EXPIRED' }, keyId: key.id });
    // Refused from the very object that was accepted a millisecond earlier.
    expect(server.findBySecret(secret)!.key).toBe(before);
  });

  it('does not remember unknown secrets, and stays bounded however many keys are presented', () => {
    const { secret } = server.create({ name: 'team' });
    server.findBySecret(secret);
    for (let i = 0; i < 2_000; i++) expect(server.findBySecret(`tg_unknown${i}`)).toBeNull();
    expect(remembered(server)).toBe(1);

    const secrets = cliDb.transaction(() => Array.from({ length: 10_050 }, (_, i) => cli.create({ name: `k${i}` }).secret))();
    for (const s of secrets) expect(server.findBySecret(s)).not.toBeNull();
    expect(remembered(server)).toBeLessThanOrEqual(10_000);
    expect(remembered(server)).toBeGreaterThan(0);
  });
});
