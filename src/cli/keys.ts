import type { Command } from 'commander';
import { STRATEGIES } from '../domain/endpoints.js';
import { createKey, KeyInputError, keyView, rotateKey, SCOPE_ENDPOINTS, updateKey, type KeyInput } from '../admin/keys.js';
import type { Config } from '../config.js';
import type { Keys } from '../store/ports.js';
import { CliError, configFrom, withStorage, type GlobalOpts } from './common.js';

const FLAG: Record<string, string> = {
  name: '--name',
  owner: '--owner',
  rate: '--rate',
  credits: '--credits',
  endpoints: '--endpoints',
  strategies: '--strategies',
  expires_at: '--expires',
  cache_isolated: '--isolated',
  overlap: '--overlap',
};

/**
 * Run with the key store of the configured data dir; input mistakes become CLI errors naming
 * the flag. Only `create` may create tollgate.db: the other commands act on existing keys.
 */
function withStore<T>(cmd: Command, fn: (keys: Keys, config: Readonly<Config>) => T | Promise<T>, mode: 'read' | 'create' = 'read'): Promise<T> {
  const config = configFrom(cmd.optsWithGlobals<GlobalOpts>());
  return withStorage(config, 'main', mode, async (storage) => {
    try {
      return await fn(storage.keys, config);
    } catch (err) {
      if (err instanceof KeyInputError) throw new CliError(`${FLAG[err.field] ?? err.field}: ${err.message}`);
      throw err;
    }
  });
}

interface KeyOpts {
  name?: string;
  owner?: string;
  rate?: string;
  credits?: string;
  endpoints?: string;
  strategies?: string;
  expires?: string;
  isolated?: boolean;
  json?: boolean;
}

function inputOf(o: KeyOpts): KeyInput {
  return {
    name: o.name,
    owner: o.owner,
    rate: o.rate,
    credits: o.credits,
    endpoints: o.endpoints,
    strategies: o.strategies,
    expires_at: o.expires,
    cache_isolated: o.isolated,
  };
}

function print(v: ReturnType<typeof keyView>, json: boolean | undefined): void {
  console.log(json ? JSON.stringify(v, null, 2) : Object.entries(v).map(([f, x]) => `${f}: ${x ?? '-'}`).join('\n'));
}

/** The options create and update share; update's values may also say none/all/never. */
function limitOptions(cmd: Command, update: boolean): Command {
  const clear = (word: string) => (update ? `; '${word}' clears` : '');
  return cmd
    .option('--owner <owner>', 'owning team or person')
    .option('--rate <policies>', `request-rate policies, e.g. 600/minute,20000/day${update ? "; 'none' removes the limit" : ' (default: keys.defaults.rate)'}`)
    .option('--credits <budgets>', `credit budgets over UTC periods, e.g. 1000/month${update ? "; 'none' removes the budget" : ' (default: keys.defaults.credits)'}`)
    .option('--endpoints <list>', `allowed endpoints (${SCOPE_ENDPOINTS.join(',')})${clear('all')}`)
    .option('--strategies <list>', `allowed strategies (${STRATEGIES.join(',')})${clear('all')}`)
    .option('--expires <iso>', `expiry time, ISO 8601${clear('never')}`)
    .option('--isolated', 'own cache entries: the key neither reads nor feeds the shared cache')
    .option('--json', 'print JSON');
}

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('manage client API keys (stored hashed in <data-dir>/tollgate.db)');

  limitOptions(keys.command('create').description('create a key; its secret is printed once and never again').requiredOption('--name <name>', 'a human name, e.g. the team'), false).action(
    async function (this: Command, o: KeyOpts) {
      const { key, secret } = await withStore(this, (s, c) => createKey(s, c.keys.defaults, inputOf(o)), 'create');
      if (o.json) console.log(JSON.stringify({ id: key.id, key: secret }));
      else console.log(`Created ${key.id} (${key.name}).\nSecret (shown once, store it now):\n  ${secret}`);
    },
  );

  keys
    .command('list')
    .description('list keys (never their secrets)')
    .option('--json', 'print JSON')
    .action(async function (this: Command, o: { json?: boolean }) {
      const now = Date.now();
      const all = (await withStore(this, (s) => s.list())).map((k) => keyView(k, now));
      if (o.json) return console.log(JSON.stringify(all, null, 2));
      if (all.length === 0) return console.log('No keys yet: create one with `tollgate keys create --name <team>`.');
      for (const k of all) {
        const limits = [k.rate, k.credits && `credits ${k.credits}`].filter(Boolean).join('; ');
        console.log(`${k.id}  ${k.prefix}…  ${k.state.padEnd(7)}  ${k.name}${k.owner ? ` (${k.owner})` : ''}${limits ? `  [${limits}]` : ''}`);
      }
    });

  keys
    .command('show <id>')
    .description('show one key')
    .option('--json', 'print JSON')
    .action(async function (this: Command, id: string, o: { json?: boolean }) {
      const k = await withStore(this, (s) => s.get(id));
      if (!k) throw new CliError(`no key with id ${id}`);
      print(keyView(k, Date.now()), o.json);
    });

  limitOptions(keys.command('update <id>').description('change a key; a running server applies it on the next request').option('--name <name>', 'new name'), true)
    .option('--no-isolated', 'share the cache again')
    .action(async function (this: Command, id: string, o: KeyOpts) {
      const k = await withStore(this, (s) => updateKey(s, id, inputOf(o)));
      if (!k) throw new CliError(`no key with id ${id}`);
      print(keyView(k, Date.now()), o.json);
    });

  keys
    .command('rotate <id>')
    .description('give a key a new secret (same id, limits and usage); printed once')
    .option('--overlap <duration>', 'how long the old secret keeps working, e.g. 24h (default 0: it stops at once)')
    .option('--json', 'print {"id","key"} as JSON')
    .action(async function (this: Command, id: string, o: { overlap?: string; json?: boolean }) {
      const r = await withStore(this, (s) => rotateKey(s, id, o.overlap));
      if (!r.ok) throw new CliError(r.reason === 'not_found' ? `no key with id ${id}` : `${id} is revoked; create a new key instead`);
      if (o.json) return console.log(JSON.stringify({ id: r.key.id, key: r.secret }));
      const until = r.key.previousExpiresAt !== null && r.key.previousExpiresAt > Date.now() ? `until ${new Date(r.key.previousExpiresAt).toISOString()}` : 'no longer';
      console.log(`Rotated ${id}; the old secret works ${until}.\nNew secret (shown once, store it now):\n  ${r.secret}`);
    });

  keys
    .command('revoke <id>')
    .description('revoke a key; a running server refuses it on the next request')
    .action(async function (this: Command, id: string) {
      const done = await withStore(this, async (s) => ((await s.get(id)) ? s.revoke(id) : null));
      if (done === null) throw new CliError(`no key with id ${id}`);
      console.log(done ? `Revoked ${id}.` : `${id} was already revoked.`);
    });
}
