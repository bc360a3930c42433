import { Option, type Command } from 'commander';
import { STRATEGIES } from '../domain/endpoints.js';
import { createKey, KeyInputError, keyView, rotateKey, SCOPE_ENDPOINTS, updateKey, WHOLE_INPUT, type KeyInput } from '../admin/keys.js';
import { keyWithBudgets } from '../admin/teams.js';
import { Accounting } from '../gateway/accounting.js';
import type { Config } from '../config.js';
import type { Keys } from '../store/ports.js';
import { cliActor } from './audit.js';
import { CliError, configFrom, examples, jsonOption, printJson, withStorage, type GlobalOpts } from './common.js';

const FLAG: Record<string, string> = {
  name: '--name',
  team: '--team',
  owner: '--owner',
  rate: '--rate',
  credits: '--credits',
  endpoints: '--endpoints',
  strategies: '--strategies',
  expires_at: '--expires',
  cache_isolated: '--isolated',
  overlap: '--overlap',
};

const UPDATE_FLAGS = '--name, --team, --rate, --credits, --endpoints, --strategies, --expires, --isolated or --no-isolated';

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
      // The admin API's name for the whole body means nothing on a command line: the flags are named instead.
      if (err instanceof KeyInputError && err.field === WHOLE_INPUT) throw new CliError(`${err.message}: give at least one of ${UPDATE_FLAGS}`);
      if (err instanceof KeyInputError) throw new CliError(`${FLAG[err.field] ?? err.field}: ${err.message}`);
      throw err;
    }
  });
}

interface KeyOpts {
  name?: string;
  team?: string;
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
    team: o.team,
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
  if (json) printJson(v);
  else console.log(Object.entries(v).map(([f, x]) => `${f}: ${x ?? '-'}`).join('\n'));
}

/** A new secret as `--json` prints it: the admin API's `{id, key, api_key}`, `key` shown only here. */
function printSecret(k: Parameters<typeof keyView>[0], secret: string): void {
  printJson({ id: k.id, key: secret, api_key: keyView(k, Date.now()) });
}

/** The options create and update share; update's values may also say none/all/never. */
function limitOptions(cmd: Command, update: boolean): Command {
  const clear = (word: string) => (update ? `; '${word}' clears` : '');
  return cmd
    .option('--team <team>', `the team the key belongs to, whose budget it shares (tollgate teams)${clear('none')}`)
    .addOption(new Option('--owner <team>', 'deprecated: the old name of --team').hideHelp())
    .option('--rate <policies>', `request-rate policies, e.g. 600/minute,20000/day${update ? "; 'none' removes the limit" : ' (default: keys.defaults.rate)'}`)
    .option('--credits <budgets>', `credit budgets over UTC periods, e.g. 1000/month${update ? "; 'none' removes the budget" : ' (default: keys.defaults.credits)'}`)
    .option('--endpoints <list>', `allowed endpoints (${SCOPE_ENDPOINTS.join(',')})${clear('all')}`)
    .option('--strategies <list>', `allowed strategies (${STRATEGIES.join(',')})${clear('all')}`)
    .option('--expires <iso>', `expiry time, ISO 8601${clear('never')}`)
    .option('--isolated', 'own cache entries: the key neither reads nor feeds the shared cache');
}

const KEY_JSON = 'print the key as JSON (as the admin API)';

/** Budgets as `keys show` and `teams show` print them: used, limit and what is left per period. */
export function budgetText(budgets: readonly { limit: number; period: string; used: number; remaining: number; reset_seconds: number }[]): string {
  return budgets.length === 0 ? 'none' : budgets.map((b) => `${b.used}/${b.limit} per ${b.period} used, ${b.remaining} left (resets in ${b.reset_seconds} s)`).join('; ');
}
const SECRET_JSON = 'print {id, key, api_key} as JSON (as the admin API); key is the secret';

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('manage client API keys (stored hashed in <data-dir>/tollgate.db)');
  examples(keys, [
    ['a key for the growth team, its limits from keys.defaults', 'tollgate keys create --name growth-api --team growth'],
    ['every key of the server in ./data, never their secrets', 'tollgate keys list --data-dir ./data'],
  ]);

  const create = limitOptions(keys.command('create').description('create a key; its secret is printed once and never again').requiredOption('--name <name>', 'a human name, e.g. the team'), false);
  jsonOption(create, SECRET_JSON);
  examples(create, [
    ['600 requests a minute, 5000 credits a month', 'tollgate keys create --name growth --rate 600/minute --credits 5000/month'],
    ['only company lookups, until the end of January', 'tollgate keys create --name crm-sync --endpoints company,company_posts --expires 2027-01-31T00:00:00Z'],
    ['the secret alone, for a script', 'tollgate keys create --name ci --json | jq -r .key'],
  ]).action(async function (this: Command, o: KeyOpts) {
    const { key, secret } = await withStore(this, (s, c) => createKey(s, c.keys.defaults, inputOf(o), cliActor()), 'create');
    if (o.json) printSecret(key, secret);
    else console.log(`Created ${key.id} (${key.name}).\nSecret (shown once, store it now):\n  ${secret}`);
  });

  const list = keys.command('list').description('list keys (never their secrets)');
  jsonOption(list, 'print an array of keys as JSON');
  examples(list, [
    ['one line per key: id, prefix, state, name, limits', 'tollgate keys list'],
    ['the ids of the revoked keys', `tollgate keys list --json | jq -r '.[] | select(.state == "revoked") | .id'`],
  ]).action(async function (this: Command, o: { json?: boolean }) {
    const now = Date.now();
    const all = (await withStore(this, (s) => s.list())).map((k) => keyView(k, now));
    if (o.json) return printJson(all);
    if (all.length === 0) return console.log('No keys yet: create one with `tollgate keys create --name <team>`.');
    for (const k of all) {
      const limits = [k.rate, k.credits && `credits ${k.credits}`].filter(Boolean).join('; ');
      console.log(`${k.id}  ${k.prefix}…  ${k.state.padEnd(7)}  ${k.name}${k.team ? ` (team ${k.team})` : ''}${limits ? `  [${limits}]` : ''}`);
    }
  });

  const show = keys.command('show <id>').description("show one key, with what its budgets and its team's have used and have left this period");
  jsonOption(show, 'print the key as JSON (as GET /admin/keys/:id): with budgets and team_budgets [{limit, period, used, reserved, remaining, reset_seconds}]');
  examples(show, [['one key, field by field', 'tollgate keys show key_0123456789abcdef01234567']]).action(async function (this: Command, id: string, o: { json?: boolean }) {
    const config = configFrom(this.optsWithGlobals<GlobalOpts>());
    const shown = await withStorage(config, 'main', 'read', async (storage) => {
      const k = await storage.keys.get(id);
      return k && keyWithBudgets(k, new Accounting(storage.credits, storage.ledger, { estimates: {}, providerBudgets: [] }), Date.now());
    });
    if (!shown) throw new CliError(`no key with id ${id}`, 'NOT_FOUND');
    if (o.json) return printJson(shown);
    const { budgets, team_budgets, ...k } = shown;
    print(k, false);
    console.log(`budget: ${budgetText(budgets)}`);
    if (k.team !== null) console.log(`team budget: ${budgetText(team_budgets)}`);
  });

  const update = limitOptions(keys.command('update <id>').description('change a key; a running server applies it on the next request').option('--name <name>', 'new name'), true).option(
    '--no-isolated',
    'share the cache again',
  );
  jsonOption(update, KEY_JSON);
  examples(update, [
    ['raise the monthly budget, keep the rest', 'tollgate keys update key_0123456789abcdef01234567 --credits 20000/month'],
    ['lift the rate limit and the expiry', 'tollgate keys update key_0123456789abcdef01234567 --rate none --expires never'],
  ]).action(async function (this: Command, id: string, o: KeyOpts) {
    const k = await withStore(this, (s) => updateKey(s, id, inputOf(o), cliActor()));
    if (!k) throw new CliError(`no key with id ${id}`, 'NOT_FOUND');
    print(keyView(k, Date.now()), o.json);
  });

  const rotate = keys
    .command('rotate <id>')
    .description('give a key a new secret (same id, limits and usage); printed once')
    .option('--overlap <duration>', 'how long the old secret keeps working, e.g. 24h (default 0: it stops at once)');
  jsonOption(rotate, SECRET_JSON);
  examples(rotate, [
    ['a new secret; the old one stops at once', 'tollgate keys rotate key_0123456789abcdef01234567'],
    ['the old secret keeps working for a day, while clients switch', 'tollgate keys rotate key_0123456789abcdef01234567 --overlap 24h'],
  ]).action(async function (this: Command, id: string, o: { overlap?: string; json?: boolean }) {
    const r = await withStore(this, (s) => rotateKey(s, id, o.overlap, cliActor()));
    if (!r.ok) throw r.reason === 'not_found' ? new CliError(`no key with id ${id}`, 'NOT_FOUND') : new CliError(`${id} is revoked; create a new key instead`, 'CONFLICT');
    if (o.json) return printSecret(r.key, r.secret);
    const until = r.key.previousExpiresAt !== null && r.key.previousExpiresAt > Date.now() ? `until ${new Date(r.key.previousExpiresAt).toISOString()}` : 'no longer';
    console.log(`Rotated ${id}; the old secret works ${until}.\nNew secret (shown once, store it now):\n  ${r.secret}`);
  });

  const revoke = keys.command('revoke <id>').description('revoke a key; a running server refuses it on the next request');
  jsonOption(revoke, 'print the revoked key as JSON (as POST /admin/keys/:id/revoke)');
  examples(revoke, [['refuse a key from its next request on', 'tollgate keys revoke key_0123456789abcdef01234567']]).action(
    async function (this: Command, id: string, o: { json?: boolean }) {
      // Revoking a revoked key succeeds and changes nothing, as in the admin API.
      const after = await withStore(this, async (s) => ((await s.get(id)) ? { done: await s.revoke(id, cliActor()), key: await s.get(id) } : null));
      if (after === null || !after.key) throw new CliError(`no key with id ${id}`, 'NOT_FOUND');
      if (o.json) return printJson(keyView(after.key, Date.now()));
      console.log(after.done ? `Revoked ${id}.` : `${id} was already revoked.`);
    },
  );
}
