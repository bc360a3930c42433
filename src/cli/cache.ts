import type { Command } from 'commander';
import { purgeFilter } from '../domain/purge-filter.js';
import { CacheStore } from '../store/sqlite/cache.js';
import { CliError, configFrom, openForCli, type GlobalOpts } from './common.js';

function withCache<T>(cmd: Command, fn: (cache: CacheStore, domain: string) => T): T {
  const config = configFrom(cmd.optsWithGlobals<GlobalOpts>());
  const db = openForCli(config, 'cache.db', 'read');
  try {
    // A one-shot command reads each entry at most once: nothing to keep in memory.
    return fn(new CacheStore(db, { memoryMaxBytes: 0 }), config.network.domain);
  } finally {
    db.close();
  }
}

export function registerCache(program: Command): void {
  const cache = program.command('cache').description('inspect and purge the response cache (<data-dir>/cache.db)');

  cache
    .command('stats')
    .description('entries, bytes and hit ratio')
    .option('--json', 'print JSON')
    .action(function (this: Command, o: { json?: boolean }) {
      const s = withCache(this, (c) => c.stats());
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
    .action(function (this: Command, o: { url?: string; id?: string; endpoint?: string; all?: boolean }) {
      const n = withCache(this, (c, domain) => {
        const filter = purgeFilter(o, domain);
        if (typeof filter === 'string') throw new CliError(`cache purge: ${filter}`);
        return c.purge(filter);
      });
      console.log(`Purged ${n} entr${n === 1 ? 'y' : 'ies'}.`);
    });
}
