import { getGlobalDispatcher, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readFileSync } from 'node:fs';
import { DOCS_CSP } from '../../src/http/api-docs.js';
import { DOCUMENT_PATH } from '../helpers/openapi-contract.js';
import { startStack, type Stack } from '../helpers/stack.js';

let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { adminToken: 'admin-token-for-openapi-0123456789' } });
});
afterAll(async () => s.close());

async function get(path: string) {
  const res = await request(s.url + path);
  const body = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, headers: res.headers, body };
}

describe('the API description', () => {
  it('GET /openapi.json serves the document as JSON, without a key', async () => {
    const r = await get('/openapi.json');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(r.headers['x-request-id']).toMatch(/^req_/);
    const served = JSON.parse(r.body.toString('utf8'));
    expect(served).toEqual(parse(readFileSync(DOCUMENT_PATH, 'utf8')));
    expect(served.openapi).toBe('3.1.0');
  });

  it('GET /docs is a Swagger UI page whose every asset the gateway serves itself', async () => {
    const page = await get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toBe(DOCS_CSP);
    const html = page.body.toString('utf8');
    const refs = [...html.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.sort()).toEqual(['docs/favicon-32x32.png', 'docs/init.js', 'docs/swagger-ui-bundle.js', 'docs/swagger-ui.css']);
    expect(html).not.toMatch(/https?:|\/\//);
    const types: Record<string, string> = { css: 'text/css', js: 'text/javascript', png: 'image/png' };
    for (const ref of refs) {
      // Relative to /docs: the page also works under a path prefix.
      const asset = await get('/' + ref);
      expect(asset.status, ref).toBe(200);
      expect(asset.headers['content-type'], ref).toContain(types[ref.split('.').pop()!]);
      expect(asset.body.length, ref).toBeGreaterThan(200);
    }
    const bundle = (await get('/docs/swagger-ui-bundle.js')).body.toString('utf8');
    expect(bundle).toContain('SwaggerUIBundle');
    const init = (await get('/docs/init.js')).body.toString('utf8');
    expect(init).toContain("url: 'openapi.json'");
    // Swagger UI would otherwise send the document to an online validator.
    expect(init).toContain('validatorUrl: null');
  });

  it('every /v1 and /admin answer of the integration tests is checked against the document', async () => {
    // Installed by test/setup/openapi-contract.ts on the dispatcher undici's request() uses.
    expect((getGlobalDispatcher() as unknown as Record<symbol, unknown>)[Symbol.for('tollgate.openapiContract')]).toBe(true);
    // Answers of each kind, judged by the hook as they arrive: a lookup, a refusal, an admin call.
    expect((await s.get('/v1/company?org_id=7')).status).toBe(200);
    expect((await s.get('/v1/company?org_id=7', { method: 'DELETE' })).status).toBe(405);
    const keys = await s.get('/admin/keys', { key: 'admin-token-for-openapi-0123456789' });
    expect(keys.status).toBe(200);
  });
});
