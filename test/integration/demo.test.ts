import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { validateConfig } from '../../src/config.js';
import { startSimulator } from '../../src/simulator/index.js';
import { exited, runCli, startCli } from '../helpers/cli.js';
import { SIM_KEY } from '../helpers/stack.js';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'tollgate-demo-test-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const PROFILE = '/v1/profile?url=https://www.linkedin.com/in/jane-doe';
const READY = /gateway: +(http:\/\/[\d.]+:\d+)[\s\S]*data dir: +(\S+)[\s\S]*demo key: +(tg_\w+)[\s\S]*Try:/;

describe('tollgate demo stays apart from the operator data', () => {
  it('uses a data dir of its own, touches no key it did not create, listens on 127.0.0.1, and leaves nothing that works', async () => {
    // The operator's real setup: ./data in the working directory, as serve uses it, with a team's key named "demo".
    const cwd = tempDir();
    const made = await runCli(['keys', 'create', '--name', 'demo', '--owner', 'a real team', '--json'], {}, 15_000, { cwd });
    expect(made.code, made.stderr).toBe(0);
    const team = JSON.parse(made.stdout) as { id: string; key: string };
    const realData = join(cwd, 'data');

    // TOLLGATE_HOST and TOLLGATE_DATA_DIR are meant for serve (the Docker image sets both).
    const env = { TOLLGATE_PORT: '0', TOLLGATE_HOST: '0.0.0.0', TOLLGATE_DATA_DIR: realData, TOLLGATE_LOG_LEVEL: 'warn' };
    const { child, match } = await startCli(['demo'], env, READY, 20_000, cwd);
    const [, gw, demoDir, demoKey] = match as unknown as [string, string, string, string];
    try {
      expect(gw).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(demoDir).not.toBe(realData);
      expect(existsSync(join(demoDir, 'tollgate.db'))).toBe(true);
      const res = await request(gw + PROFILE, { headers: { authorization: `Bearer ${demoKey}` } });
      expect(res.statusCode).toBe(200);
      await res.body.dump();
      // Bound to 127.0.0.1 only: another loopback address is refused.
      await expect(request(gw.replace('127.0.0.1', '127.0.0.2') + '/healthz')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      child.kill('SIGTERM');
      expect(await exited(child)).toBe(0);
    }
    expect(existsSync(demoDir)).toBe(false);

    const shown = await runCli(['keys', 'show', team.id, '--json'], {}, 15_000, { cwd });
    expect(JSON.parse(shown.stdout)).toMatchObject({ name: 'demo', state: 'active', revoked_at: null });

    // The operator's gateway on ./data: the demo key does not work, the demo's answers are not cached here.
    const sim = await startSimulator({ apiKey: SIM_KEY });
    const app = createApp(validateConfig({ dataDir: realData, logLevel: 'silent', server: { host: '127.0.0.1', port: 0 }, upstream: { url: sim.url, apiKey: SIM_KEY } }));
    try {
      const url = await app.listen();
      const withDemoKey = await request(url + PROFILE, { headers: { authorization: `Bearer ${demoKey}` } });
      expect(withDemoKey.statusCode).toBe(401);
      await withDemoKey.body.dump();
      const withTeamKey = await request(url + PROFILE, { headers: { authorization: `Bearer ${team.key}` } });
      expect(withTeamKey.statusCode).toBe(200);
      expect(withTeamKey.headers['x-cache-status']).toBe('MISS');
      await withTeamKey.body.dump();
    } finally {
      await app.close();
      await sim.close();
    }
  });

  it('opens the dashboard with an admin token of its own: the sign-in page answers, and the token reads the demo key through /admin', async () => {
    const cwd = tempDir();
    const { child, match } = await startCli(['demo', '--json'], { TOLLGATE_PORT: '0', TOLLGATE_LOG_LEVEL: 'warn' }, /^\{.*\}$/m, 20_000, cwd);
    try {
      const shown = JSON.parse(match[0]) as { gateway_url: string; dashboard_url: string; admin_token: string; key: string };
      expect(shown.dashboard_url).toBe(`${shown.gateway_url}/dashboard`);
      expect(shown.admin_token).toMatch(/^demo_[0-9a-f]{32}$/);
      const signIn = await request(`${shown.dashboard_url}/sign-in`);
      expect(signIn.statusCode).toBe(200);
      expect(await signIn.body.text()).toContain('Admin token');
      const keys = await request(`${shown.gateway_url}/admin/keys`, { headers: { authorization: `Bearer ${shown.admin_token}` } });
      expect(keys.statusCode).toBe(200);
      const listed = (await keys.body.json()) as { keys: Array<{ name: string; team: string | null }> };
      expect(listed.keys.map((k) => [k.name, k.team])).toEqual([['demo', 'tollgate demo']]);
    } finally {
      child.kill('SIGTERM');
      expect(await exited(child)).toBe(0);
    }
  });

  it('never prints an admin token the operator configured, in --json either (admin_token null), and still uses it', async () => {
    const configured = 'operators-own-admin-token-0123';
    const { child, match, output } = await startCli(['demo', '--json'], { TOLLGATE_PORT: '0', TOLLGATE_LOG_LEVEL: 'warn', TOLLGATE_ADMIN_TOKEN: configured }, /^\{.*\}$/m, 20_000, tempDir());
    try {
      const shown = JSON.parse(match[0]) as { gateway_url: string; admin_token: string | null };
      expect(shown.admin_token).toBeNull();
      expect(output()).not.toContain(configured);
      const keys = await request(`${shown.gateway_url}/admin/keys`, { headers: { authorization: `Bearer ${configured}` } });
      expect(keys.statusCode).toBe(200);
      await keys.body.dump();
    } finally {
      child.kill('SIGTERM');
      expect(await exited(child)).toBe(0);
    }
  });

  it('refuses --data-dir: the demo never runs on a chosen directory', async () => {
    const dir = join(tempDir(), 'data');
    const r = await runCli(['demo', '--data-dir', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('demo runs on a temporary data directory of its own');
    expect(existsSync(dir)).toBe(false);
  });
});
