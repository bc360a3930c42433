import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { startStack, type Stack } from '../helpers/stack.js';

let s: Stack;
beforeAll(async () => {
  s = await startStack();
});
afterAll(async () => s.close());
beforeEach(() => s.reset());

const PATH = '/v1/company?org_id=5';

describe('authentication', () => {
  it.each<[string, Record<string, string>, string]>([
    ['no header', {}, 'MISSING_API_KEY'],
    ['empty bearer', { authorization: 'Bearer ' }, 'MISSING_API_KEY'],
    ['basic scheme', { authorization: 'Basic dXNlcjpwdw==' }, 'MISSING_API_KEY'],
    ['unknown key', { authorization: 'Bearer tg_' + 'A'.repeat(40) }, 'INVALID_API_KEY'],
    ['malformed key', { authorization: 'Bearer not-a-key' }, 'INVALID_API_KEY'],
    ['provider key', { authorization: 'Bearer sim_provider_key_for_tests_0123456789' }, 'INVALID_API_KEY'],
  ])('%s → 401 %s, provider never called', async (_name, headers, code) => {
    const r = await s.get(PATH, { key: null, headers });
    expect(r.status).toBe(401);
    expect(r.json.error.code).toBe(code);
    expect(r.json.error.request_id).toBe(r.headers['x-request-id']);
    expect(s.sim.callCount()).toBe(0);
  });

  it('refuses a key separated by a no-break space (0xA0) or followed by one: 401 MISSING_API_KEY (was served)', async () => {
    for (const authorization of [`Bearer\u00a0${s.key}`, `Bearer ${s.key}\u00a0`, `\u00a0Bearer ${s.key}`]) {
      const r = await s.get(PATH, { key: null, headers: { authorization } });
      expect(r.status).toBe(401);
      expect(r.json.error.code).toBe('MISSING_API_KEY');
    }
    expect(s.sim.callCount()).toBe(0);
    // Spaces and tabs, as RFC 9110 allows around it, are still fine.
    expect((await s.get(PATH, { key: null, headers: { authorization: `Bearer \t ${s.key}\t` } })).status).toBe(200);
  });

  it('accepts the scheme in any case', async () => {
    const r = await s.get(PATH, { key: null, headers: { authorization: `bEaReR ${s.key}` } });
    expect(r.status).toBe(200);
  });

  it('ignores a key sent only in the query string', async () => {
    const r = await s.get(`${PATH}&api_key=${s.key}`, { key: null });
    expect(r.status).toBe(401);
    expect(r.json.error.code).toBe('MISSING_API_KEY');
  });

  it('checks the key before the parameters', async () => {
    const r = await s.get('/v1/company?org_id=0', { key: null });
    expect(r.status).toBe(401);
  });

  it('refuses a revoked and an expired key', async () => {
    const revoked = s.newKey();
    s.app.keys.revoke(revoked.id);
    expect((await s.get(PATH, { key: revoked.secret })).json.error.code).toBe('API_KEY_REVOKED');
    const expired = s.newKey({ expiresAt: Date.now() - 1000 });
    const r = await s.get(PATH, { key: expired.secret });
    expect(r.status).toBe(401);
    expect(r.json.error.code).toBe('API_KEY_EXPIRED');
    const future = s.newKey({ expiresAt: Date.now() + 3_600_000 });
    expect((await s.get(PATH, { key: future.secret })).status).toBe(200);
    expect(s.sim.callCount()).toBe(1);
  });

  it('sees a key revoked by the CLI within 2 s', async () => {
    const k = s.newKey();
    expect((await s.get(PATH, { key: k.secret })).status).toBe(200);
    const out = await runCli(['keys', 'revoke', k.id, '--data-dir', s.dataDir]);
    expect(out.code).toBe(0);
    const revokedAt = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - revokedAt < 2000) {
      status = (await s.get(PATH, { key: k.secret })).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe(401);
  });

  it('serves a key created by the CLI while the server runs', async () => {
    const out = await runCli(['keys', 'create', '--name', 'late', '--json', '--data-dir', s.dataDir]);
    const { key } = JSON.parse(out.stdout);
    expect((await s.get(PATH, { key })).status).toBe(200);
  });
});

describe('scopes', () => {
  it('refuses endpoints and strategies outside the key scope with 403 ACCESS_DENIED', async () => {
    const k = s.newKey({ endpoints: ['company'], strategies: ['cached'] });
    expect((await s.get(PATH, { key: k.secret })).status).toBe(200);
    const ep = await s.get('/v1/profile?person.id=1', { key: k.secret });
    expect(ep.status).toBe(403);
    expect(ep.json.error.code).toBe('ACCESS_DENIED');
    expect(ep.json.error.message).toContain("'profile'");
    const st = await s.get(`${PATH}&strategy=fetch`, { key: k.secret });
    expect(st.status).toBe(403);
    expect(st.json.error.message).toContain("'fetch'");
    expect(s.sim.callCount()).toBe(1);
  });
});
