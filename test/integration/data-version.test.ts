import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { DataVersionWatch } from '../../src/store/sqlite/data-version.js';

const nextTurn = () => new Promise<void>((r) => setImmediate(r));
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

describe('DataVersionWatch', () => {
  it("reports another connection's commit in the next event-loop turn, once", async () => {
    const { server, cli } = twoConnections();
    const watch = new DataVersionWatch(server);
    await nextTurn();
    expect(watch.changed()).toBe(false);
    cli.prepare('INSERT INTO t VALUES (1)').run();
    // Same turn as a look already taken: requests of one turn share one answer.
    expect(watch.changed()).toBe(false);
    await nextTurn();
    expect(watch.changed()).toBe(true);
    await nextTurn();
    expect(watch.changed()).toBe(false);
  });

  it("does not report the connection's own commits (stores count those themselves)", async () => {
    const { server } = twoConnections();
    const watch = new DataVersionWatch(server);
    server.prepare('INSERT INTO t VALUES (1)').run();
    await nextTurn();
    expect(watch.changed()).toBe(false);
  });

  it('looks at most once per turn however often it is asked', async () => {
    const { server, cli } = twoConnections();
    const watch = new DataVersionWatch(server);
    await nextTurn();
    cli.prepare('INSERT INTO t VALUES (1)').run();
    const answers = Array.from({ length: 100 }, () => watch.changed());
    expect(answers.filter(Boolean)).toHaveLength(1);
    expect(answers[0]).toBe(true);
  });
});
