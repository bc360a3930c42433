import type { Command } from 'commander';
import { purgeFilter } from '../domain/purge-filter.js';
import type { ResponseCache } from '../store/ports.js';
import { CliError, configFrom, withStorage, type GlobalOpts } from './common.js';

/** Run with the response cache of the configured data dir; never opens tollgate.db. */
function withCache<T>(cmd: Command, fn: (cache: ResponseCache, domain: string) => T | Promise<T>): Promise<T> {
  const config = configFrom(cmd.optsWithGlobals<GlobalOpts>());
  return withStorage(config, 'cache', 'read', (storage) => fn(storage.cache, config.network.domain));
}

export function registerCache(program: Command): void {
  const cache = program.command('cache').description('inspect and purge the response cache (<data-dir>/cache.db)');

  cache
    .command('stats')
    .description('entries, bytes and hit ratio')
    .option('--json', 'print JSON')
    .action(async function (this: Command, o: { json?: boolean }) {
      const s = await withCache(this, (c) => c.readStats());
      if (o.json) return console.log(JSON.stringify(s, null, 2));
      const ratio = s.hitRatio === null ? '-' : `${(s.hitRatio * 100).toFixed(1)}%`;
      console.log(`entries: ${s.entries}\nbytes:   ${s.bytes}\nhits:    ${s.hits}\nmisses:  ${s.misses}\nhit ratio: ${ratio}`);
      for (const [ep, v] of Object.entries(s.byEndpoint)) console.log(`  ${ep.padEnd(14)} ${v.entries} entries, ${v.bytes} bytes`);
    });

  cache
    .command('purge')
    .description('delete cached answers (a running server stops serving them at once)')
    .option('--url <url>', 'a profile or company URL: every endpoint of that entity')
    .option('--id <param=value>', 'an id identifier, e.g. org_id=42 or person.id=7')
    .option('--endpoint <name>', 'only this endpoint (profile, profile_posts, company, company_posts)')
    .option('--all', 'everything')
    .action(async function (this: Command, o: { url?: string; id?: string; endpoint?: string; all?: boolean }) {
      const n = await withCache(this, (c, domain) => {
        const filter = purgeFilter(o, domain);
        if (typeof filter === 'string') throw new CliError(`cache purge: ${filter}`);
        return c.purge(filter);
      });
      console.log(`Purged ${n} entr${n === 1 ? 'y' : 'ies'}.`);
    });
}
