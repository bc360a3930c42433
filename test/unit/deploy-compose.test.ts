import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DCLinter } from 'dclint';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { trustedProxies } from '../../src/domain/trusted-proxies.js';
import { durationMs, interpolate, interpolationDefaults, parseEnvFile } from '../helpers/compose.js';
import { promtool } from '../helpers/promtool.js';

/*
 * docker-compose.yml and what it mounts, read as Compose would (no Docker in `npm test` or
 * CI; scripts/compose-smoke.sh starts the stack for real, by hand): the replicated stack must
 * keep working as a demo, and must keep the properties
 * README "Deploy" promises (shared storage on every replica, health-gated start, drain time,
 * secrets from the environment, every replica scraped).
 */

const ROOT = join(import.meta.dirname, '../..');
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');

type Service = Record<string, any>;
const compose = parse(read('docker-compose.yml')) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const service = (name: string): Service => {
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
};
const [gateway, lb, postgres, redis, simulator, prometheus] = ['gateway', 'lb', 'postgres', 'redis', 'simulator', 'prometheus'].map(service) as [Service, Service, Service, Service, Service, Service];
const PLACEHOLDER = /demo|change[-_]?me|example|placeholder|simulator/i;

/** The host file behind a container path, from a service's `./host:/container[:ro]` mounts. */
function hostPath(service: Service, containerPath: string): string {
  for (const v of service.volumes as string[]) {
    const [host, target] = v.split(':') as [string, string];
    if (host.startsWith('.') && (containerPath === target || containerPath.startsWith(`${target}/`))) return join(ROOT, host, containerPath.slice(target.length));
  }
  throw new Error(`no bind mount holds ${containerPath}`);
}

/** What a gateway replica would start with, given the variables Compose interpolates from. */
function gatewayConfig(vars: Record<string, string>) {
  const env = Object.fromEntries(Object.entries(gateway.environment as Record<string, string>).map(([k, v]) => [k, interpolate(String(v), vars)]));
  return { env, config: loadConfig({ env, file: hostPath(gateway, env.TOLLGATE_CONFIG!) }) };
}

const flag = (args: string[], name: string) => args[args.indexOf(name) + 1];

describe('docker-compose.yml', () => {
  it('is a Compose file: the Compose Specification\'s schema and dclint\'s rules (.dclintrc) find nothing', () => {
    const linter = new DCLinter(parse(read('.dclintrc')));
    // Typed here: dclint's declarations import their own types without extensions, which NodeNext does not resolve.
    const results = linter.lintFiles([join(ROOT, 'docker-compose.yml')], false) as Array<{ messages: Array<{ line: number; rule: string; message: string }> }>;
    const findings = results.flatMap((r) => r.messages.map((m) => `${m.line}: ${m.rule}: ${m.message}`));
    expect(findings).toEqual([]);
  });

  it('publishes nginx and Prometheus on loopback unless an address is set, and nothing else', () => {
    const published = Object.entries(compose.services).flatMap(([name, s]) => ((s.ports ?? []) as string[]).map((p) => `${name} ${interpolate(p, {})}`));
    expect(published.sort()).toEqual(['lb 127.0.0.1:8080:8080', 'prometheus 127.0.0.1:9090:9090']);
    expect(interpolate((lb.ports as string[])[0]!, { TOLLGATE_PUBLISH_ADDR: '0.0.0.0' })).toBe('0.0.0.0:8080:8080');
  });

  it('runs at least two gateway replicas from the Dockerfile, reached through one published port', () => {
    expect(gateway.build).toBe('.');
    expect(gateway.deploy.replicas).toBeGreaterThanOrEqual(2);
    // Either would pin the service to one container (a name, or a host port, conflict).
    expect(gateway.container_name).toBeUndefined();
    expect(gateway.ports).toBeUndefined();
    // On loopback unless the operator names an address: a demo stack is not served to the network by default.
    expect(lb.ports).toEqual(['${TOLLGATE_PUBLISH_ADDR:-127.0.0.1}:${TOLLGATE_PUBLISH_PORT:-8080}:8080']);
    expect(lb.volumes).toContain('./deploy/compose/nginx.conf:/etc/nginx/nginx.conf:ro');
    // `resolve` in an upstream block arrived in nginx 1.27.3.
    const [major, minor] = /^nginx:(\d+)\.(\d+)/.exec(lb.image)!.slice(1).map(Number) as [number, number];
    expect(major * 1000 + minor).toBeGreaterThanOrEqual(1028);
    expect(lb.depends_on.gateway.condition).toBe('service_healthy');
  });

  it('starts the gateways only once PostgreSQL (15/16, on a named volume) and Redis 7 are healthy', () => {
    expect(gateway.depends_on).toEqual({ postgres: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' } });
    expect(postgres.image).toMatch(/^postgres:1[56]\b/);
    expect(postgres.healthcheck.test).toEqual(expect.arrayContaining(['pg_isready']));
    const [volume, target] = (postgres.volumes as string[])[0]!.split(':');
    expect(target).toBe('/var/lib/postgresql/data');
    expect(compose.volumes).toHaveProperty(volume!);
    expect(redis.image).toMatch(/^redis:7\b/);
    expect(redis.healthcheck.test).toEqual(['CMD', 'redis-cli', 'ping']);
    // The gateways' own check is readiness, which nginx waits for.
    expect(gateway.healthcheck.test.join(' ')).toContain('/readyz');
  });

  it('out of the box (no .env): a valid shared-backend configuration whose provider is the simulator', () => {
    const { config } = gatewayConfig({});
    const db = new URL(config.storage.databaseUrl!);
    expect(db.hostname).toBe('postgres');
    expect(db.username).toBe(postgres.environment.POSTGRES_USER);
    expect(db.pathname).toBe(`/${postgres.environment.POSTGRES_DB}`);
    expect(db.password).toBe(interpolate(postgres.environment.POSTGRES_PASSWORD, {}));
    expect(new URL(config.storage.redisUrl!).hostname).toBe('redis');
    const args = simulator.command as string[];
    expect(simulator.image).toBe(gateway.image);
    expect(flag(args, '--host')).toBe('0.0.0.0');
    expect(config.upstream.url).toBe(`http://simulator:${flag(args, '--port')}`);
    expect(config.upstream.apiKey).toBe(flag(args, '--api-key'));
    expect(config.adminToken).toBeNull();
  });

  it('with .env.example filled in: the real provider, /admin on, and the one password in both services', () => {
    const vars = parseEnvFile(read('.env.example'), { commented: true });
    expect(vars.POSTGRES_PASSWORD).toBeTruthy();
    const { config } = gatewayConfig(vars);
    expect(new URL(config.storage.databaseUrl!).password).toBe(vars.POSTGRES_PASSWORD);
    expect(interpolate(postgres.environment.POSTGRES_PASSWORD, vars)).toBe(vars.POSTGRES_PASSWORD);
    expect(config.upstream.url).toBe(vars.TOLLGATE_UPSTREAM_URL);
    expect(config.upstream.apiKey).toBe(vars.TOLLGATE_UPSTREAM_API_KEY);
    expect(config.adminToken).toBe(vars.TOLLGATE_ADMIN_TOKEN);
    // A real provider key never reaches the simulator's command line (or its log line).
    expect((simulator.command as string[]).join(' ')).not.toContain('TOLLGATE_UPSTREAM_API_KEY');
  });

  it('holds no secret: secret-looking values are interpolated, with placeholder defaults only', () => {
    const secretName = /PASSWORD|API_KEY|TOKEN|SECRET|DATABASE_URL|REDIS_URL/;
    let checked = 0;
    for (const [name, svc] of Object.entries(compose.services)) {
      for (const [key, raw] of Object.entries((svc.environment ?? {}) as Record<string, string>)) {
        if (!secretName.test(key)) continue;
        checked++;
        const value = String(raw);
        // Every password-bearing part comes from a variable; a fixed value may hold no secret.
        if (/PASSWORD|API_KEY|TOKEN|SECRET/.test(key)) expect(value, `${name}.${key}`).toMatch(/^\$\{[A-Z_]+:-[^}]*\}$/);
        else expect(new URL(interpolate(value, {})).password === '' || /\$\{POSTGRES_PASSWORD/.test(value), `${name}.${key}`).toBe(true);
        for (const d of interpolationDefaults(value)) if (d !== '') expect(d, `${name}.${key}`).toMatch(PLACEHOLDER);
      }
    }
    expect(checked).toBeGreaterThanOrEqual(5);
    expect(flag(simulator.command, '--api-key')).toMatch(PLACEHOLDER);
    for (const [name, value] of Object.entries(parseEnvFile(read('.env.example'), { commented: true }))) {
      if (/PASSWORD|KEY|TOKEN/.test(name)) expect(value, name).toMatch(/change-me|your-/);
    }
    expect(read('.gitignore').split('\n')).toContain('.env');
    expect(read('.dockerignore').split('\n')).toContain('.env');
  });

  it('disables no health check (docker compose up --wait); the simulator\'s and the gateways\' probe their own ports', () => {
    // `disable: true` makes `docker compose up --wait` fail: "container … has no healthcheck
    // configured" (docker/compose#13522); a service without one inherits its image's.
    for (const [name, s] of Object.entries(compose.services)) expect(s.healthcheck?.disable, name).toBeUndefined();
    const probe = (s: Service) => /127\.0\.0\.1:(\d+)\//.exec((s.healthcheck.test as string[]).join(' '))?.[1];
    expect(probe(simulator)).toBe(flag(simulator.command as string[], '--port'));
    expect(probe(gateway)).toBe(String(gateway.expose[0]));
  });

  it('gives a stopping replica time to drain before Docker kills it', () => {
    const { config } = gatewayConfig({});
    // The server exits by itself at most 5 s after the grace period (README "Shutdown").
    expect(durationMs(gateway.stop_grace_period)).toBeGreaterThan(config.server.shutdownGraceMs + 5_000);
  });

  it('nginx spreads requests over every replica and tries another only where no provider call was made', () => {
    const conf = read('deploy/compose/nginx.conf').replace(/#.*$/gm, '');
    expect(conf).toMatch(/resolver 127\.0\.0\.11 /);
    // max_fails=0: by default one refused connection excludes a replica for 10 s, healthy or
    // not; a rolling restart then had both excluded at once, and nginx answered 502.
    expect(conf).toMatch(new RegExp(`server gateway:${gateway.expose[0]} resolve max_fails=0;`));
    expect(conf).toMatch(/listen 8080;/);
    const retry = /proxy_next_upstream ([^;]+);/.exec(conf)![1]!.split(/\s+/);
    expect(retry).toContain('http_503');
    expect(retry).not.toContain('timeout');
    expect(retry).not.toContain('non_idempotent');
    const { config } = gatewayConfig({});
    const idle = Number(/keepalive_timeout (\d+)s;/.exec(conf)![1]) * 1000;
    expect(idle).toBeLessThan(config.server.keepAliveTimeoutMs);
    expect(conf).toMatch(/location = \/metrics \{\s*return 404;/);
    // nginx's address on a Docker network (default pools) is a trusted proxy of the gateways.
    const trusted = trustedProxies(config.server.trustedProxies);
    for (const address of ['172.18.0.5', '192.168.16.3', '10.0.1.7']) expect(trusted.has(address), address).toBe(true);
  });
});

describe('Prometheus in docker-compose.yml (deploy/prometheus/prometheus.compose.yml)', () => {
  const configPath = (prometheus.command as string[]).find((a) => a.startsWith('--config.file='))!.split('=')[1]!;
  const file = hostPath(prometheus, configPath);

  it('is the mounted file, and promtool accepts it with the alert rules it loads', () => {
    expect(file).toBe(join(ROOT, 'deploy/prometheus/prometheus.compose.yml'));
    const r = promtool(['check', 'config', file]);
    expect(r.output).toContain('SUCCESS: 1 rule files found');
    expect(r.code).toBe(0);
    const cfg = parse(readFileSync(file, 'utf8')) as { rule_files: string[] };
    expect(cfg.rule_files).toEqual(['alerts.yml']);
  });

  it('scrapes each gateway replica directly, on the gateway port', () => {
    const cfg = parse(readFileSync(file, 'utf8')) as { scrape_configs: Array<Record<string, any>> };
    const job = cfg.scrape_configs.find((j) => j.job_name === 'tollgate')!;
    expect(job.metrics_path ?? '/metrics').toBe('/metrics');
    // DNS service discovery: one target per replica, however many there are.
    expect(job.dns_sd_configs).toEqual([expect.objectContaining({ names: ['gateway'], type: 'A', port: Number(gateway.expose[0]) })]);
    expect(job.static_configs).toBeUndefined();
  });
});
