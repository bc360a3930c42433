import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { exchange } from '../helpers/raw-http.js';
import { adminCaller, startStack, type Stack } from '../helpers/stack.js';

/**
 * Inputs of the admin API and the CLI that were answered with a 500, a stack trace, or a value
 * other than the one given (each found in review): each gets its documented refusal, and
 * nothing is stored.
 */
const TOKEN = 'admin-token-for-bad-input-0123456789';
let s: Stack;
const admin = adminCaller(() => s, TOKEN);
const dir = mkdtempSync(join(tmpdir(), 'tollgate-bad-input-'));
const clean = Object.fromEntries(Object.keys(process.env).filter((k) => k.startsWith('TOLLGATE_')).map((k) => [k, '']));
beforeAll(async () => {
  s = await startStack({ config: { adminToken: TOKEN } });
});
afterAll(async () => {
  await s.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the admin API', () => {
  it('a rotation overlap past a year: 400 INVALID_PARAMETER, the key unchanged (was 500: a date past what JavaScript can print)', async () => {
    const { json: created } = await admin('POST', '/keys', { name: 'rotate-me' });
    const r = await admin('POST', `/keys/${created.id}/rotate`, { overlap: '999999999d' });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('INVALID_PARAMETER');
    expect(r.json.error.message).toContain('overlap');
    const again = await admin('POST', `/keys/${created.id}/rotate`, { overlap: '366d' });
    expect(again.status).toBe(200);
  });

  it('a query parameter given twice: 400 INVALID_PARAMETER (was 500)', async () => {
    const r = await admin('GET', '/usage?by=key&by=team');
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'INVALID_PARAMETER', message: 'by: give it once.' });
  });

  it.each([
    ['POST', '/keys', { name: 'feb', expires_at: '2030-02-30' }],
    ['GET', '/usage?from=2026-02-31&to=2026-03-10', undefined],
    ['GET', '/audit?from=2026-02-31', undefined],
    ['GET', '/usage?from=2026-01-01&to=9999-12-31', undefined],
  ] as const)('%s %s: a day the calendar lacks, or past 9999, is refused (was moved, or answered as year 10000)', async (method, path, body) => {
    const r = await admin(method, path, body);
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('INVALID_PARAMETER');
  });

  it('a key name with a control character (a NUL: text PostgreSQL cannot hold, which stopped migrate-data for good) is refused', async () => {
    for (const name of ['billing\u0000bot', 'tab\there']) {
      const r = await admin('POST', '/keys', { name });
      expect(r.status).toBe(400);
      expect(r.json.error).toMatchObject({ code: 'INVALID_PARAMETER', message: expect.stringContaining('name') });
    }
  });

  it('a name that is not valid Unicode (a lone surrogate) is refused, not stored changed', async () => {
    for (const body of [{ name: 'n\ud800' }, { name: 'ok', team: 't\ud800' }]) {
      const r = await admin('POST', '/keys', body);
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('INVALID_PARAMETER');
    }
    expect((await admin('GET', '/teams')).json.teams ?? []).not.toContainEqual(expect.objectContaining({ name: expect.stringContaining('\ufffd') }));
  });

  it('a body that is not valid UTF-8 is refused, not stored with its bytes replaced (was 201, the name U+FFFD)', async () => {
    for (const [path, method, bytes] of [
      ['/keys', 'POST', Buffer.concat([Buffer.from('{"name":"bad'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')])],
      ['/teams/ok-team', 'PUT', Buffer.concat([Buffer.from('{"credits":"5'), Buffer.from([0xc0, 0xaf]), Buffer.from('/month"}')])],
    ] as const) {
      const r = await request(`${s.url}/admin${path}`, { method, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: bytes });
      const json = (await r.body.json()) as { error: { code: string; message: string; request_id: string } };
      expect(r.statusCode).toBe(400);
      expect(json.error).toMatchObject({ code: 'INVALID_PARAMETER', message: expect.stringContaining('UTF-8'), request_id: r.headers['x-request-id'] });
    }
    expect((await admin('GET', '/keys')).json.keys).not.toContainEqual(expect.objectContaining({ name: expect.stringContaining('\ufffd') }));
    expect((await admin('GET', '/teams/ok-team')).status).toBe(404);
  });

  it('a query whose percent-escapes are not UTF-8 is refused, not read as the literal text (was: keys moved to the team named "%E9quipe")', async () => {
    // A client that encodes "équipe" in Latin-1 sends %E9quipe; the query parser kept such escapes as text.
    expect((await admin('PUT', '/teams/sales', {})).status).toBe(200);
    expect((await admin('PUT', '/teams/%25E9quipe', {})).json.name).toBe('%E9quipe');
    const { json: key } = await admin('POST', '/keys', { name: 'in-sales', team: 'sales' });
    for (const [method, path] of [
      ['DELETE', '/teams/sales?reassign=%E9quipe'],
      ['GET', '/audit?actor=%E9ric'],
      ['GET', '/usage?by=key&from=2026-01-01%FF'],
      ['GET', '/notifications?cursor=%ED%A0%80'],
    ] as const) {
      const r = await admin(method, path);
      expect(r.status).toBe(400);
      expect(r.json.error).toEqual({ code: 'INVALID_PARAMETER', message: 'The query string has percent-escapes that are not UTF-8.', request_id: r.headers['x-request-id'] });
    }
    expect((await admin('GET', `/keys/${key.id}`)).json.team).toBe('sales');
    // A % that escapes nothing stays literal, as on /v1.
    expect((await admin('GET', '/audit?actor=100%')).status).toBe(200);
  });

  it('a body on an admin GET is refused for what it is, not as a lookup\'s (the message said "Lookup requests")', async () => {
    const port = Number(new URL(s.url).port);
    const r = await exchange(port, `GET /admin/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Length: 2\r\n\r\n{}`, [false], 1, 5000);
    const a = r.answers[0]!;
    expect(a.status).toBe(400);
    expect(JSON.parse(a.body).error).toEqual({ code: 'BODY_NOT_ALLOWED', message: 'GET and HEAD requests take no request body.', request_id: a.headers['x-request-id'] });
  });

  it('a body over the size limit is refused as too large, not as "not a JSON object" (was the latter, for a valid object)', async () => {
    const big = JSON.stringify({ name: 'big', team: 'x'.repeat(70 * 1024) });
    for (const chunked of [false, true]) {
      const body = chunked ? Readable.from([Buffer.from(big)]) : big;
      const r = await request(`${s.url}/admin/keys`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body });
      const json = (await r.body.json()) as { error: { code: string; message: string; request_id: string } };
      expect(r.statusCode).toBe(400);
      expect(json.error).toMatchObject({ code: 'INVALID_PARAMETER', message: 'The request body is larger than 64 KiB.', request_id: r.headers['x-request-id'] });
    }
  });
});

describe('the CLI', () => {
  it('keys rotate --overlap past a year: exit 2 with the reason, no stack trace', async () => {
    const env = { ...clean, TOLLGATE_DATA_DIR: join(dir, 'rotate') };
    const id = JSON.parse((await runCli(['keys', 'create', '--name', 'r', '--json'], env)).stdout).id as string;
    const r = await runCli(['keys', 'rotate', id, '--overlap', '999999999d', '--json'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('overlap');
    expect(r.stderr).not.toMatch(/RangeError|\n\s+at /);
  });

  it('a webhook URL that does not parse: config check exits 2 and says so, no stack trace', async () => {
    const file = join(dir, 'webhook.yaml');
    writeFileSync(file, 'notifications:\n  webhooks:\n    - url: "not a url"\n      secret: "0123456789abcdef"\n');
    const r = await runCli(['--config', file, 'config', 'check', '--json'], { ...clean, TOLLGATE_DATA_DIR: dir });
    expect(r.stderr).not.toMatch(/TypeError|\n\s+at /);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).valid).toBe(false);
  });
});
