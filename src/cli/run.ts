import type { Command } from 'commander';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listenError } from '../domain/startup-error.js';
import { CliError, configFrom, examples, jsonOption, msNumber, portNumber, printJson, type GlobalOpts } from './common.js';

/** The gateway, its lifecycle and the simulator, loaded when a command that runs them runs (see storageModule). */
const gatewayModules = () => Promise.all([import('../app.js'), import('../obs/lifecycle.js'), import('../simulator/index.js')]);

interface ServeOpts extends GlobalOpts {
  port?: string;
  host?: string;
  upstreamUrl?: string;
}

export function registerRun(program: Command): void {
  const serve = program
    .command('serve')
    .description('run the gateway (logs JSON lines on stdout)')
    .option('-p, --port <port>', 'listen port (default: $TOLLGATE_PORT or 8080)')
    .option('--host <host>', 'listen address (default: $TOLLGATE_HOST or 0.0.0.0)')
    .option('--upstream-url <url>', 'provider base URL, without /v1 (default: $TOLLGATE_UPSTREAM_URL)');
  examples(serve, [
    ['the real provider, its key from the environment', 'TOLLGATE_UPSTREAM_URL=https://api.example.com TOLLGATE_UPSTREAM_API_KEY=… tollgate serve'],
    ['a config file, on port 9000', 'tollgate serve --config /etc/tollgate/tollgate.yaml --port 9000'],
  ]).action(async function (this: Command) {
      const config = configFrom(this.optsWithGlobals<ServeOpts>());
      const [{ openApp }, { closeOnSignals }] = await gatewayModules();
      const app = await openApp(config);
      const url = await app.listen();
      app.logger.info({ url }, 'tollgate listening');
      closeOnSignals(app);
    });

  const simulator = program
    .command('simulator')
    .description('run the built-in provider simulator (a stand-in for the real provider)')
    .option('-p, --port <port>', 'listen port', '8090')
    .option('--host <host>', 'listen address', '127.0.0.1')
    .option('--api-key <key>', 'the provider key it accepts', 'sim_provider_key')
    .option('--latency <ms>', 'added latency per answer', '0');
  jsonOption(simulator, 'print {url, api_key, stats_url} as one JSON line once listening');
  examples(simulator, [
    ['a provider for a gateway on this machine', 'tollgate simulator --port 8090 --api-key sim_provider_key'],
    ['its address for a script (port 0: any free port)', 'tollgate simulator --port 0 --json'],
  ]).action(async (o: { port: string; host: string; apiKey: string; latency: string; json?: boolean }) => {
      // Read before anything starts: `Number(o.latency) || 0` ran a simulator without latency for 'abc', and a negative one for '-5'.
      const [port, latencyMs] = [portNumber(o.port), msNumber('--latency', o.latency)];
      const [, , { startSimulator }] = await gatewayModules();
      // A port in use is an everyday failure named in one line, as serve's (it was printed as a bug, with its stack).
      const sim = await startSimulator({ port, host: o.host, apiKey: o.apiKey, latencyMs }).catch((err: unknown) =>
        Promise.reject(listenError(err, o.host, port, { port: '--port', host: '--host' })),
      );
      // One line, not indented: a script reads it while the process keeps running.
      if (o.json) console.log(JSON.stringify({ url: sim.url, api_key: o.apiKey, stats_url: `${sim.url}/__sim/stats` }));
      else console.log(`Provider simulator on ${sim.url} (key: ${o.apiKey}); control plane at ${sim.url}/__sim/stats`);
      const stop = () => void sim.close().then(() => process.exit(0));
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    });

  const demo = program
    .command('demo')
    .description('the simulator and a gateway on a temporary data directory (removed when it stops), a demo key, curl commands')
    .option('-p, --port <port>', 'gateway port (default: $TOLLGATE_PORT or 8080)')
    .option('--host <host>', 'listen address (default: 127.0.0.1; $TOLLGATE_HOST is not used)');
  jsonOption(demo, 'print {gateway_url, provider_url, data_dir, key, dashboard_url, admin_token (null when adminToken is configured: yours is never printed)} as one JSON line once listening');
  examples(demo, [
    ['try Tollgate: it prints curl commands to paste', 'tollgate demo'],
    ['the gateway on another port, reachable from other machines', 'tollgate demo --port 9000 --host 0.0.0.0'],
  ]).action(async function (this: Command) {
      const opts = this.optsWithGlobals<ServeOpts & { json?: boolean }>();
      if (opts.dataDir !== undefined) {
        throw new CliError('demo runs on a temporary data directory of its own, removed when it stops; --data-dir is for serve and the other commands');
      }
      // Never the serve data directory: its synthetic answers would become cache hits and its
      // key a real key. Nothing of the demo outlives it, so its key stops working with it.
      const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-demo-'));
      process.once('exit', () => rmSync(dataDir, { recursive: true, force: true }));
      const simKey = 'sim_' + randomBytes(12).toString('hex');
      const [{ createApp }, { closeOnSignals }, { startSimulator }] = await gatewayModules();
      const sim = await startSimulator({ port: 0, apiKey: simKey });
      const host = opts.host ?? '127.0.0.1';
      const config = configFrom({ ...opts, dataDir, host, upstreamUrl: sim.url });
      // The dashboard needs an admin token: one of the demo's own unless one is configured, gone with it.
      const adminToken = config.adminToken ?? 'demo_' + randomBytes(16).toString('hex');
      // Always the embedded backend, whatever TOLLGATE_DATABASE_URL says: the demo must never write to shared storage.
      const app = createApp({ ...config, adminToken, storage: { databaseUrl: null, redisUrl: null }, upstream: { ...config.upstream, apiKey: simKey } });
      const secret = app.keys.create({ name: 'demo', team: 'tollgate demo' }).secret;
      await app.listen();
      const addr = app.server.server.address();
      const port = typeof addr === 'object' && addr ? addr.port : config.server.port;
      const reach = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
      const gw = `http://${reach}:${port}`;
      if (opts.json) {
        // As the text says "the admin token you configured": an operator's own token is never printed (null), only the demo's.
        const shownToken = config.adminToken === null ? adminToken : null;
        console.log(JSON.stringify({ gateway_url: gw, provider_url: sim.url, data_dir: dataDir, key: secret, dashboard_url: `${gw}/dashboard`, admin_token: shownToken }));
        return closeOnSignals(app, () => sim.close());
      }
      const auth = `-H "Authorization: Bearer ${secret}"`;
      console.log(
        [
          '',
          'Tollgate demo is running (Ctrl-C to stop).',
          `  gateway:   ${gw}  (listening on ${host})`,
          `  provider:  ${sim.url}  (built-in simulator)`,
          `  data dir:  ${dataDir}  (temporary: removed when the demo stops, with the key)`,
          `  demo key:  ${secret}`,
          `  dashboard: ${gw}/dashboard  (sign in with the admin token ${config.adminToken === null ? adminToken : 'you configured'})`,
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
