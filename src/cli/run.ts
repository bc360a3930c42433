import type { Command } from 'commander';
import { randomBytes } from 'node:crypto';
import { createApp, openMainDb } from '../app.js';
import { systemClock } from '../clock.js';
import { closeOnSignals } from '../obs/lifecycle.js';
import { KeyStore } from '../store/keys.js';
import { startSimulator } from '../simulator/index.js';
import { configFrom, portNumber, type GlobalOpts } from './common.js';

interface ServeOpts extends GlobalOpts {
  port?: string;
  host?: string;
  upstreamUrl?: string;
}

export function registerRun(program: Command): void {
  program
    .command('serve')
    .description('run the gateway')
    .option('-p, --port <port>', 'listen port (default: $TOLLGATE_PORT or 8080)')
    .option('--host <host>', 'listen address (default: $TOLLGATE_HOST or 0.0.0.0)')
    .option('--upstream-url <url>', 'provider base URL (default: $TOLLGATE_UPSTREAM_URL)')
    .action(async function (this: Command) {
      const config = configFrom(this.optsWithGlobals<ServeOpts>());
      const app = createApp(config);
      const url = await app.listen();
      app.logger.info({ url }, 'tollgate listening');
      closeOnSignals(app);
    });

  program
    .command('simulator')
    .description('run the built-in provider simulator (a stand-in for the real provider)')
    .option('-p, --port <port>', 'listen port', '8090')
    .option('--host <host>', 'listen address', '127.0.0.1')
    .option('--api-key <key>', 'the provider key it accepts', 'sim_provider_key')
    .option('--latency <ms>', 'added latency per answer', '0')
    .action(async (o: { port: string; host: string; apiKey: string; latency: string }) => {
      const sim = await startSimulator({ port: portNumber(o.port), host: o.host, apiKey: o.apiKey, latencyMs: Number(o.latency) || 0 });
      console.log(`Provider simulator on ${sim.url} (key: ${o.apiKey}); control plane at ${sim.url}/__sim/stats`);
      const stop = () => void sim.close().then(() => process.exit(0));
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    });

  program
    .command('demo')
    .description('start the simulator and the gateway, create a demo key, print curl commands')
    .option('-p, --port <port>', 'gateway port (default: $TOLLGATE_PORT or 8080)')
    .action(async function (this: Command) {
      const simKey = 'sim_' + randomBytes(12).toString('hex');
      const sim = await startSimulator({ port: 0, apiKey: simKey });
      const opts = this.optsWithGlobals<ServeOpts>();
      const base = configFrom(opts);
      const config = configFrom({ ...opts, upstreamUrl: sim.url });
      const secret = freshDemoKey(config);
      const app = createApp({ ...config, upstream: { ...config.upstream, apiKey: simKey } });
      await app.listen();
      const addr = app.server.server.address();
      const port = typeof addr === 'object' && addr ? addr.port : base.server.port;
      const gw = `http://127.0.0.1:${port}`;
      const auth = `-H "Authorization: Bearer ${secret}"`;
      console.log(
        [
          '',
          'Tollgate demo is running (Ctrl-C to stop).',
          `  gateway:   ${gw}`,
          `  provider:  ${sim.url}  (built-in simulator)`,
          `  data dir:  ${config.dataDir}`,
          `  demo key:  ${secret}`,
          '',
          'Try:',
          `  curl -s ${auth} "${gw}/v1/profile?url=https://www.linkedin.com/in/jane-doe"`,
          `  curl -s ${auth} "${gw}/v1/company?url=https://www.linkedin.com/company/acme&strategy=fetch"`,
          `  curl -s ${auth} "${gw}/v1/company/posts?url=https://www.linkedin.com/company/acme&page_size=5"`,
          '',
        ].join('\n'),
      );
      closeOnSignals(app, () => sim.close());
    });
}

/** Each demo run revokes the previous demo keys: their secrets were printed once and are gone. */
function freshDemoKey(config: ReturnType<typeof configFrom>): string {
  const db = openMainDb(config);
  try {
    const store = new KeyStore(db, systemClock);
    for (const k of store.list()) if (k.name === 'demo' && k.revokedAt === null) store.revoke(k.id);
    return store.create({ name: 'demo', owner: 'tollgate demo' }).secret;
  } finally {
    db.close();
  }
}
