import { Option, type Command } from 'commander';
import { ENDPOINT_NAMES } from '../domain/endpoints.js';
import { cacheStatsView } from '../admin/cache.js';
import { purgeFilter } from '../domain/purge-filter.js';
import { purgeChange } from '../domain/audit.js';
import type { AuditLog, ResponseCache } from '../store/ports.js';
import { cliActor } from './audit.js';
import { CliError, configFrom, examples, jsonOption, printJson, withStorage, type GlobalOpts } from './common.js';

/**
 * Run with the response cache of the configured data dir. Only a purge opens tollgate.db too,
 * for the audit log (opened before anything is deleted, so that a missing one is refused first).
 */
function withCache<T>(cmd: Command, fn: (cache: ResponseCache, domain: string, audit: () => AuditLog) => T | Promise<T>, audited = false): Promise<T> {
  const config = configFrom(cmd.optsWithGlobals<GlobalOpts>());
  return withStorage(config, audited ? ['cache', 'main'] : 'cache', 'read', (storage) => fn(storage.cache, config.network.domain, () => storage.audit));
}

export function registerCache(program: Command): void {
  const cache = program.command('cache').description('inspect and purge the response cache (<data-dir>/cache.db)');
  examples(cache, [
    ['entries, bytes and hit ratio of the server in ./data', 'tollgate cache stats --data-dir ./data'],
    ['forget everything cached about one company', 'tollgate cache purge --url https://www.linkedin.com/company/acme'],
  ]);

  const stats = cache.command('stats').description('entries, bytes and hit ratio');
  jsonOption(stats, 'print {entries, bytes, hits, misses, hit_ratio, by_endpoint} as JSON (as GET /admin/cache/stats)');
  examples(stats, [
    ['the cache of the data directory in $TOLLGATE_DATA_DIR (or ./data)', 'tollgate cache stats'],
    ['the hit ratio alone, for a script', "tollgate cache stats --json | jq .hit_ratio"],
  ]).action(async function (this: Command, o: { json?: boolean }) {
    const s = cacheStatsView(await withCache(this, (c) => c.readStats()));
    if (o.json) return printJson(s);
    const ratio = s.hit_ratio === null ? '-' : `${(s.hit_ratio * 100).toFixed(1)}%`;
    console.log(`entries: ${s.entries}\nbytes:   ${s.bytes}\nhits:    ${s.hits}\nmisses:  ${s.misses}\nhit ratio: ${ratio}`);
    for (const [ep, v] of Object.entries(s.by_endpoint)) console.log(`  ${ep.padEnd(14)} ${v.entries} entries, ${v.bytes} bytes`);
  });

  const purge = cache
    .command('purge')
    .description('delete cached answers (a running server stops serving them at once)')
    .option('--url <url>', 'a profile or company URL: every endpoint of that entity')
    .option('--id <param=value>', 'an id identifier, e.g. org_id=42 or person.id=7')
    .addOption(new Option('--endpoint <name>', 'only this endpoint').choices(ENDPOINT_NAMES))
    .option('--all', 'everything');
  jsonOption(purge, 'print {purged} as JSON (as POST /admin/cache/purge)');
  examples(purge, [
    ['every endpoint of one profile, however its URL is spelled', 'tollgate cache purge --url https://www.linkedin.com/in/jane-doe'],
    ['one company by its id, only its posts', 'tollgate cache purge --id org_id=42 --endpoint company_posts'],
    ['all cached profile posts', 'tollgate cache purge --endpoint profile_posts'],
    ['everything', 'tollgate cache purge --all --json'],
  ]).action(async function (this: Command, o: { url?: string; id?: string; endpoint?: string; all?: boolean; json?: boolean }) {
    const n = await withCache(
      this,
      async (c, domain, audit) => {
        const filter = purgeFilter(o, domain);
        if (typeof filter === 'string') throw new CliError(`cache purge: ${filter}`);
        const purged = await c.purge(filter);
        // cache.db is not the audit log's database: the entry follows the purge (README "Audit log").
        await audit().append(purgeChange(cliActor(), filter, purged));
        return purged;
      },
      true,
    );
    if (o.json) return printJson({ purged: n });
    console.log(`Purged ${n} entr${n === 1 ? 'y' : 'ies'}.`);
  });
}
