import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateConfig } from '../../src/config.js';
import { PROVIDER_SCOPE } from '../../src/domain/credits.js';
import type { LedgerRow } from '../../src/domain/ledger.js';
import { teamScope } from '../../src/domain/teams.js';
import { openBackend, openMainDb, type SqliteBackend } from '../../src/store/open.js';
import { LedgerRetention } from '../../src/store/sqlite/ledger-retention.js';
import { DAY_MS } from '../../src/store/sqlite/ledger-rows.js';
import { runCli } from './cli.js';
import { profileUrl, startStack } from './stack.js';

/**
 * An embedded installation as a server leaves it, to copy elsewhere: keys made by the server
 * and by the CLI (one rotated, so both its secrets work), ledger rows and cache entries from a
 * real gateway in front of the simulator, older days of ledger whose raw rows the retention
 * pruned (a few rows of one written after the pass, held raw beside its totals), a reservation left by a process that died mid-call, and more rows than one batch of
 * the copy holds.
 */
export interface EmbeddedInstallation {
  readonly dataDir: string;
  /** The provider URL its cache.db was recorded for. */
  readonly upstreamUrl: string;
  readonly now: number;
  readonly keyIds: readonly string[];
  /** The first key's secret; the rotated key's previous and current secrets. */
  readonly secrets: { readonly first: string; readonly previous: string; readonly current: string };
  /** The first UTC day (ms) whose raw ledger rows are all held. */
  readonly rawFrom: number;
  readonly abandoned: { readonly requestId: string; readonly estimate: number };
  /**
   * A copy of the installation after a restart of its server would have charged the abandoned
   * reservation: what the copy in PostgreSQL must answer like. Read-only use; closed by cleanup.
   */
  expected(): SqliteBackend;
  cleanup(): Promise<void>;
}

const HISTORY_DAYS = 6;
const RETENTION_DAYS = 3;
const HISTORY_ROWS = 2_400;
const EXTRA_CACHE_ENTRIES = 1_100;

export async function buildInstallation(): Promise<EmbeddedInstallation> {
  const stack = await startStack();
  const { dataDir } = stack;
  const env = { TOLLGATE_DATA_DIR: dataDir, TOLLGATE_LOG_LEVEL: 'silent' };
  const made = await runCli(['keys', 'create', '--name', 'team-b', '--team', 'b@example.com', '--rate', '600/minute,20000/day', '--credits', '1000/month', '--endpoints', 'profile,company', '--isolated', '--json'], env);
  const created = JSON.parse(made.stdout) as { id: string; key: string };
  // The key's team has a budget of its own, charged with the key's calls (and copied with its usage).
  await runCli(['teams', 'set', 'b@example.com', '--credits', '5000/month'], env);
  const rotated = JSON.parse((await runCli(['keys', 'rotate', created.id, '--overlap', '24h', '--json'], env)).stdout) as { key: string };
  for (const slug of ['alice', 'bob', 'carol']) {
    await stack.get(`/v1/profile?${profileUrl(slug)}`);
    await stack.get(`/v1/profile?${profileUrl(slug)}`);
  }
  await stack.get(`/v1/profile?${profileUrl('dave')}`, { key: created.key });
  await stack.get(`/v1/profile?${profileUrl('erin')}`, { key: rotated.key });
  const upstreamUrl = stack.sim.url;
  await stack.app.close();
  await stack.sim.close();

  const now = Date.now();
  const config = validateConfig({ dataDir });
  const keyIds = [stack.keyId, created.id];
  const cli = openBackend(config, { role: 'cli', open: ['main', 'cache'] });
  addHistory(cli, keyIds, now);
  addCacheEntries(cli, now);
  const abandoned = { requestId: 'req_abandoned', estimate: 3 };
  // Against the scopes a request of the key reserves against (Accounting): the key's, its team's, the provider's.
  const scopes = [created.id, teamScope('b@example.com'), PROVIDER_SCOPE];
  cli.credits.reserve({ requestId: abandoned.requestId, ts: now - 1_000, keyId: created.id, endpoint: 'profile', identity: 'person.id=1', estimate: abandoned.estimate }, scopes);
  // Dies with the call in flight: the reservation stays in tollgate.db.
  await cli.abandon();
  const db = openMainDb(config);
  await new LedgerRetention(db, { retentionDays: RETENTION_DAYS }).prune(now);
  db.close();
  const rawFrom = (Math.floor(now / DAY_MS) - RETENTION_DAYS) * DAY_MS;
  // Rows of a pruned day written after the pass (as a pass stopped midway leaves some): held raw and in their day's totals.
  const late = openBackend(config, { role: 'cli', open: ['main'] });
  addLateRows(late, keyIds, rawFrom - DAY_MS);
  await late.close();

  const expectedDir = mkdtempSync(join(tmpdir(), 'tollgate-expected-'));
  cpSync(dataDir, expectedDir, { recursive: true });
  const expected = openBackend(validateConfig({ dataDir: expectedDir }), { role: 'cli', open: ['main', 'cache'] });
  expected.ledger.recoverAbandoned();

  return {
    dataDir,
    upstreamUrl,
    now,
    keyIds,
    secrets: { first: stack.key, previous: created.key, current: rotated.key },
    rawFrom,
    abandoned,
    expected: () => expected,
    async cleanup() {
      await expected.close();
      rmSync(expectedDir, { recursive: true, force: true });
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Charged and free rows over the last days, some of them past the retention. */
function addHistory(backend: SqliteBackend, keyIds: readonly string[], now: number): void {
  const start = (Math.floor(now / DAY_MS) - HISTORY_DAYS) * DAY_MS;
  for (let i = 0; i < HISTORY_ROWS; i++) {
    const credits = i % 3 === 0 ? 1 + (i % 4) : 0;
    const row: LedgerRow = {
      requestId: `req_hist_${i}`,
      ts: start + Math.floor((i / HISTORY_ROWS) * HISTORY_DAYS * DAY_MS),
      keyId: keyIds[i % keyIds.length]!,
      endpoint: ['profile', 'company', 'passthrough'][i % 3]!,
      identity: `person.id=${i}`,
      cache: [null, 'HIT', 'MISS', 'STALE'][i % 4]!,
      status: 200,
      code: null,
      credits,
      creditsSaved: credits === 0 ? i % 2 : 0,
      upstreamMs: credits > 0 ? 12.5 : null,
      totalMs: 14.25,
      upstreamRequestId: credits > 0 ? `up_${i}` : null,
      unsettled: i % 50 === 0 && credits > 0,
    };
    backend.ledger.record(row);
  }
  backend.ledger.flush();
}

/** A few rows in the day starting at `day`, as a ledger batch flushed late writes them. */
function addLateRows(backend: SqliteBackend, keyIds: readonly string[], day: number): void {
  for (let i = 0; i < 5; i++) {
    backend.ledger.record({
      requestId: `req_late_${i}`,
      ts: day + (i + 1) * 3_600_000,
      keyId: keyIds[i % keyIds.length]!,
      endpoint: i % 2 ? 'company' : 'profile',
      identity: `person.id=late${i}`,
      cache: i % 2 ? 'HIT' : 'MISS',
      status: 200,
      code: null,
      credits: i % 2 ? 0 : 2,
      creditsSaved: i % 2 ? 1 : 0,
      upstreamMs: null,
      totalMs: 3,
      upstreamRequestId: null,
      unsettled: i === 2,
    });
  }
  backend.ledger.flush();
}

/** More entries than one batch of the copy, recorded for the same upstream as the server's. */
function addCacheEntries(backend: SqliteBackend, now: number): void {
  for (let i = 0; i < EXTRA_CACHE_ENTRIES; i++) {
    backend.cacheStore.put({
      key: `company|org_id=${i}`,
      endpoint: 'company',
      identity: `org_id=${i}`,
      status: i % 10 === 0 ? 404 : 200,
      data: i % 10 === 0 ? null : JSON.stringify({ id: i, name: `Company ${i}` }),
      meta: i % 10 === 0 ? null : '{}',
      errorCode: i % 10 === 0 ? 'NOT_FOUND' : null,
      errorMessage: i % 10 === 0 ? 'Not found.' : null,
      storedAt: now - i * 1_000,
      freshAsOf: i % 2 === 0 ? now - i * 500 : null,
      credits: 1,
    });
  }
  backend.cacheStore.flush();
}
