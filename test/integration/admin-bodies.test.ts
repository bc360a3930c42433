import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCaller, startStack, type Reply, type Stack } from '../helpers/stack.js';

/**
 * Admin requests whose body is empty or says nothing a route reads: an empty body is no body
 * whatever its Content-Type says, and a field a route does not take is refused on every route,
 * not only on those that read a body.
 */
const TOKEN = 'admin-token-for-admin-bodies-0123456789';
let s: Stack;
const admin = adminCaller(() => s, TOKEN);
beforeAll(async () => {
  s = await startStack({ config: { adminToken: TOKEN } });
});
afterAll(async () => {
  await s.close();
});

/** A call as `fetch(url, { method, headers: { 'content-type': 'application/json' } })` sends it: the type, no body. */
function typedButEmpty(method: string, path: string): Promise<Reply> {
  return s.get('/admin' + path, { key: null, method, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'content-length': '0' }, body: '' });
}

describe('an empty body sent as application/json', () => {
  it('revokes a key (a route without a body; was 400 "The request body must be a JSON object")', async () => {
    const { json: created } = await admin('POST', '/keys', { name: 'revoke-typed-empty' });
    const r = await typedButEmpty('POST', `/keys/${created.id}/revoke`);
    expect(r.status).toBe(200);
    expect(r.json.state).toBe('revoked');
  });

  it('deletes a team (was 400), and creates one with PUT (no budget)', async () => {
    const put = await typedButEmpty('PUT', '/teams/typed-empty');
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ name: 'typed-empty', credits: null });
    const del = await typedButEmpty('DELETE', '/teams/typed-empty');
    expect(del.status).toBe(200);
    expect(del.json.deleted).toBe('typed-empty');
  });

  it('rotates a key with the default overlap', async () => {
    const { json: created } = await admin('POST', '/keys', { name: 'rotate-typed-empty' });
    const r = await typedButEmpty('POST', `/keys/${created.id}/rotate`);
    expect(r.status).toBe(200);
    expect(r.json.key).toMatch(/^tg_/);
  });

  it('on a route that needs fields, the refusal names the missing field, not the body syntax', async () => {
    const r = await typedButEmpty('POST', '/keys');
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'INVALID_PARAMETER', message: 'name: is required.' });
    expect(r.headers['x-request-id']).toBe(r.json.error.request_id);
  });
});

describe('a body field a route does not take', () => {
  it('revoke with {"reason": …}: 400 UNKNOWN_PARAMETER and the key stays active (was revoked, the field dropped)', async () => {
    const { json: created } = await admin('POST', '/keys', { name: 'revoke-with-reason' });
    const r = await admin('POST', `/keys/${created.id}/revoke`, { reason: 'leaked' });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('UNKNOWN_PARAMETER');
    expect(r.json.error.message).toBe("Unknown field 'reason': this route takes no body fields.");
    expect((await admin('GET', `/keys/${created.id}`)).json.state).toBe('active');
  });

  it('revoke with a body that is not an object: 400, the key stays active', async () => {
    const { json: created } = await admin('POST', '/keys', { name: 'revoke-with-array' });
    const r = await admin('POST', `/keys/${created.id}/revoke`, [1]);
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('INVALID_PARAMETER');
    expect((await admin('GET', `/keys/${created.id}`)).json.state).toBe('active');
  });

  it('revoke with {}: revoked', async () => {
    const { json: created } = await admin('POST', '/keys', { name: 'revoke-with-empty-object' });
    expect((await admin('POST', `/keys/${created.id}/revoke`, {})).json.state).toBe('revoked');
  });
});
