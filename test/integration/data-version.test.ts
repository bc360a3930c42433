import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import { openBackend } from '../../src/store/open.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { DataVersionWatch, LOOK_INTERVAL_MS, outlastLooks } from '../../src/store/sqlite/data-version.js';

let dir = '';
const open: DB[] = [];
afterEach(() => {
  for (const db of open.splice(0)) db.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function twoConnections(): { server: DB; cli: DB } {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-dv-'));
  const migrations = [(db: DB) => db.exec('CREATE TABLE t (v INTEGER)')];
  const server = openDatabase(join(dir, 'x.db'), migrations);
  const cli = new Database(join(dir, 'x.db'));
  open.push(server, cli);
  return { server, cli };
}

/** A monotonic clock the test moves by hand. */
function manualClock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

describe('DataVersionWatch', () => {
  it("reports another connection's commit once its standing look is LOOK_INTERVAL_MS old, once", () => {
    const { server, cli } = twoConnections();
    const clock = manualClock();
    const watch = new DataVersionWatch(server, clock.now);
    expect(watch.changed()).toBe(false);
    cli.prepare('INSERT INTO t VALUES (1)').run();
    // A look taken less than the interval ago stands: requests close together share one answer.
    clock.advance(LOOK_INTERVAL_MS - 0.01);
    expect(watch.changed()).toBe(false);
    clock.advance(0.01);
    expect(watch.changed()).toBe(true);
    clock.advance(LOOK_INTERVAL_MS);
    expect(watch.changed()).toBe(false);
  });

  it("does not report the connection's own commits (stores count those themselves)", () => {
    const { server } = twoConnections();
    const clock = manualClock();
    const watch = new DataVersionWatch(server, clock.now);
    server.prepare('INSERT INTO t VALUES (1)').run();
    clock.advance(LOOK_INTERVAL_MS);
    expect(watch.changed()).toBe(false);
  });

  it('looks at most once per interval however often it is asked', () => {
    const { server, cli } = twoConnections();
    const clock = manualClock();
    const watch = new DataVersionWatch(server, clock.now);
    clock.advance(LOOK_INTERVAL_MS);
    cli.prepare('INSERT INTO t VALUES (1)').run();
    const answers = Array.from({ length: 100 }, () => watch.changed());
    expect(answers.filter(Boolean)).toHaveLength(1);
    expect(answers[0]).toBe(true);
  });

  it('a commit that lands while a look stands is reported by the next look, never lost', () => {
    const { server, cli } = twoConnections();
    const clock = manualClock();
    const watch = new DataVersionWatch(server, clock.now);
    clock.advance(LOOK_INTERVAL_MS);
    expect(watch.changed()).toBe(false);
    cli.prepare('INSERT INTO t VALUES (1)').run();
    for (let i = 0; i < 10; i++) expect(watch.changed()).toBe(false);
    clock.advance(LOOK_INTERVAL_MS);
    expect(watch.changed()).toBe(true);
  });

  it('outlastLooks() resolves no sooner than LOOK_INTERVAL_MS by the monotonic clock', async () => {
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      await outlastLooks(t0);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(LOOK_INTERVAL_MS);
    }
  });

  it("a CLI backend's close() outlasts the server's standing look: a key revoked through it is refused on the very next lookup", async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-dv-'));
    const config = validateConfig({ dataDir: dir });
    const server = openBackend(config, { role: 'server', upstreamUrl: 'http://127.0.0.1:9' });
    try {
      const cli = openBackend(config, { role: 'cli', open: ['main'] });
      const { key, secret } = cli.keys.create({ name: 'team' });
      // The server looks now (and remembers the key); the revocation commits while that look stands.
      expect(server.keys.findBySecret(secret)!.key.revokedAt).toBeNull();
      expect(cli.keys.revoke(key.id)).toBe(true);
      await cli.close();
      expect(server.keys.findBySecret(secret)!.key.revokedAt).not.toBeNull();
    } finally {
      await server.close();
    }
  });
});
