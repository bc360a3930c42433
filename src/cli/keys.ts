import type { Command } from 'commander';
import { ENDPOINT_NAMES, STRATEGIES } from '../api/endpoints.js';
import { systemClock } from '../clock.js';
import { KeyStore, type ApiKey } from '../store/keys.js';
import { openMainDb } from '../app.js';
import { CliError, configFrom, type GlobalOpts } from './common.js';

/** Parse a comma list against allowed names; a typo must fail loudly, not silently deny. */
export function listOption(value: string, allowed: readonly string[], flag: string): string[] {
  const items = value.split(',').map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) throw new CliError(`${flag}: give at least one of ${allowed.join(', ')}`);
  for (const it of items) if (!allowed.includes(it)) throw new CliError(`${flag}: unknown value '${it}'; allowed: ${allowed.join(', ')}`);
  return [...new Set(items)];
}

export function isoTime(value: string, flag: string): number {
  const t = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(t)) throw new CliError(`${flag}: expected an ISO 8601 time such as 2027-01-31T00:00:00Z`);
  return t;
}

/** The public view of a key: everything but the secret, which is never stored. */
export function keyView(k: ApiKey) {
  const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
  return {
    id: k.id,
    name: k.name,
    owner: k.owner,
    prefix: k.prefix,
    created_at: iso(k.createdAt),
    expires_at: iso(k.expiresAt),
    revoked_at: iso(k.revokedAt),
    last_used_at: iso(k.lastUsedAt),
    endpoints: k.endpoints,
    strategies: k.strategies,
  };
}

function withStore<T>(cmd: Command, fn: (store: KeyStore) => T): T {
  const db = openMainDb(configFrom(cmd.optsWithGlobals<GlobalOpts>()));
  try {
    return fn(new KeyStore(db, systemClock));
  } finally {
    db.close();
  }
}

interface CreateOpts {
  name: string;
  owner?: string;
  endpoints?: string;
  strategies?: string;
  expires?: string;
  json?: boolean;
}

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('manage client API keys (stored hashed in <data-dir>/tollgate.db)');

  keys
    .command('create')
    .description('create a key; its secret is printed once and never again')
    .requiredOption('--name <name>', 'a human name, e.g. the team')
    .option('--owner <owner>', 'owning team or person')
    .option('--endpoints <list>', `allowed endpoints (${ENDPOINT_NAMES.join(',')}); default all`)
    .option('--strategies <list>', `allowed strategies (${STRATEGIES.join(',')}); default all`)
    .option('--expires <iso>', 'expiry time, ISO 8601')
    .option('--json', 'print {"id","key"} as JSON')
    .action(function (this: Command, o: CreateOpts) {
      const input = {
        name: o.name,
        owner: o.owner ?? null,
        endpoints: o.endpoints ? listOption(o.endpoints, ENDPOINT_NAMES, '--endpoints') : null,
        strategies: o.strategies ? listOption(o.strategies, STRATEGIES, '--strategies') : null,
        expiresAt: o.expires ? isoTime(o.expires, '--expires') : null,
      };
      const { key, secret } = withStore(this, (s) => s.create(input));
      if (o.json) console.log(JSON.stringify({ id: key.id, key: secret }));
      else console.log(`Created ${key.id} (${key.name}).\nSecret (shown once, store it now):\n  ${secret}`);
    });

  keys
    .command('list')
    .description('list keys (never their secrets)')
    .option('--json', 'print JSON')
    .action(function (this: Command, o: { json?: boolean }) {
      const all = withStore(this, (s) => s.list()).map(keyView);
      if (o.json) return console.log(JSON.stringify(all, null, 2));
      if (all.length === 0) return console.log('No keys yet: create one with `tollgate keys create --name <team>`.');
      for (const k of all) {
        const state = k.revoked_at ? 'revoked' : k.expires_at && Date.parse(k.expires_at) <= Date.now() ? 'expired' : 'active';
        console.log(`${k.id}  ${k.prefix}…  ${state.padEnd(7)}  ${k.name}${k.owner ? ` (${k.owner})` : ''}`);
      }
    });

  keys
    .command('show <id>')
    .description('show one key')
    .option('--json', 'print JSON')
    .action(function (this: Command, id: string, o: { json?: boolean }) {
      const k = withStore(this, (s) => s.get(id));
      if (!k) throw new CliError(`no key with id ${id}`);
      const v = keyView(k);
      console.log(o.json ? JSON.stringify(v, null, 2) : Object.entries(v).map(([f, x]) => `${f}: ${x ?? '-'}`).join('\n'));
    });

  keys
    .command('revoke <id>')
    .description('revoke a key; a running server refuses it within 2 s')
    .action(function (this: Command, id: string) {
      const done = withStore(this, (s) => (s.get(id) ? s.revoke(id) : null));
      if (done === null) throw new CliError(`no key with id ${id}`);
      console.log(done ? `Revoked ${id}.` : `${id} was already revoked.`);
    });
}
