import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { lint, loadConfig } from '@redocly/openapi-core';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ENDPOINTS } from '../../src/domain/endpoints.js';
import { ERROR_CODES } from '../../src/domain/errors.js';
import { allowedParams } from '../../src/domain/params.js';
import { openApiJson } from '../../src/http/api-docs.js';
import { DOCUMENT_PATH, OpenApiContract } from '../helpers/openapi-contract.js';

/*
 * The OpenAPI document (src/openapi/tollgate.openapi.yaml) is valid by a real linter and says
 * what the code's own tables say. That the gateway's answers match it is checked on every
 * answer the integration tests receive (test/setup/openapi-contract.ts).
 */
const ROOT = new URL('../../', import.meta.url);
const text = readFileSync(DOCUMENT_PATH, 'utf8');
const contract = new OpenApiContract(text);
type Node = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const doc = contract.doc as Node;

const REQUEST_ID = 'req_01JQ3Z8Y0X4T6V2W8K5M9N7P1R';
/** Every header some error answer must carry, so that only the status and the body are judged. */
const HEADERS = {
  'x-request-id': REQUEST_ID,
  'x-ratelimit-limit': '30',
  'x-ratelimit-remaining': '0',
  'x-ratelimit-reset': '12',
  'retry-after': '12',
  allow: 'GET, HEAD',
  'www-authenticate': 'Bearer realm="tollgate"',
  'content-type': 'application/json; charset=utf-8',
};
/** A lookup, a refused method, another /v1 path, an admin route, another /admin path, /metrics. */
const TARGETS = [
  ['GET', '/v1/profile'],
  ['POST', '/v1/profile'],
  ['GET', '/v1/elsewhere'],
  ['POST', '/admin/keys/key_0/rotate'],
  ['GET', '/admin/elsewhere'],
  ['GET', '/metrics'],
] as const;

function documented(status: number, code: string): boolean {
  const body = JSON.stringify({ error: { code, message: 'Some message.', request_id: REQUEST_ID } });
  return TARGETS.some(([method, target]) => contract.check({ method, target, status, headers: HEADERS, body }).length === 0);
}

describe('the OpenAPI document', () => {
  it('passes Redocly lint (redocly.yaml: the recommended rules) without a problem', async () => {
    const config = await loadConfig({ configPath: new URL('redocly.yaml', ROOT).pathname });
    const problems = await lint({ ref: DOCUMENT_PATH.pathname, config });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? '?'}`)).toEqual([]);
    expect(doc.openapi).toMatch(/^3\.1\./);
  });

  it('documents every code of the error registry under its status', () => {
    const missing = Object.entries(ERROR_CODES).filter(([code, def]) => !documented(def.status, code));
    expect(missing.map(([code, def]) => `${def.status} ${code}`)).toEqual([]);
  });

  it('names no error code the registry does not have', () => {
    const named = new Set<string>();
    for (const [name, schema] of Object.entries(doc.components.schemas as Node)) {
      if (!name.endsWith('Error')) continue;
      const code = (schema.allOf as Node[] | undefined)?.[1]?.properties?.error?.properties?.code as Node | undefined;
      for (const c of code?.enum ?? (code?.const ? [code.const] : [])) named.add(c);
    }
    expect(named.size).toBeGreaterThan(15);
    expect([...named].filter((c) => !(c in ERROR_CODES))).toEqual([]);
  });

  it('refuses what is not documented: a status (a 4xx of the provider passes through), a code under the wrong status, a missing required header', () => {
    const body = (code: string) => JSON.stringify({ error: { code, message: 'm', request_id: REQUEST_ID } });
    expect(contract.check({ method: 'GET', target: '/v1/profile', status: 302, headers: HEADERS, body: body('X') })).toEqual(['GET /v1/profile → 302: status 302 is not documented for GET /v1/profile']);
    expect(contract.check({ method: 'GET', target: '/v1/profile', status: 418, headers: HEADERS, body: body('PROVIDER_OWN_CODE') })).toEqual([]);
    expect(documented(401, 'ACCESS_DENIED')).toBe(false);
    const { 'retry-after': _, ...noRetry } = HEADERS;
    expect(contract.check({ method: 'GET', target: '/v1/profile', status: 429, headers: noRetry, body: body('RATE_LIMIT_EXCEEDED') })).toEqual([
      'GET /v1/profile → 429: required header Retry-After is missing',
    ]);
  });

  it('describes each lookup as the endpoint table does: path, parameters, identifier precedence, strategies', () => {
    for (const def of ENDPOINTS) {
      const op = doc.paths[def.path]?.get as Node;
      expect(op, def.path).toBeDefined();
      const params = (op.parameters as Node[]).map((p) => doc.components.parameters[String(p.$ref).split('/').pop()!] as Node);
      expect(params.map((p) => p.name).sort(), def.path).toEqual([...allowedParams(def)].sort());
      expect(params.find((p) => p.name === 'strategy')!.schema.enum, def.path).toEqual([...def.strategies]);
      expect(op.description, def.path).toContain(`Identifiers, by precedence: ${def.identifiers.map((i) => `\`${i}\``).join(', ')}.`);
      for (const method of ['put', 'post', 'delete', 'options', 'patch', 'trace']) {
        expect(Object.keys(doc.paths[def.path][method].responses), `${method} ${def.path}`).toContain('405');
      }
    }
    const lookups = Object.keys(doc.paths as Node).filter((p) => p.startsWith('/v1/'));
    expect(lookups.sort()).toEqual(ENDPOINTS.map((e) => e.path).sort());
  });

  it('carries the package version, and is what GET /openapi.json serves', () => {
    const pkg = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as { version: string };
    expect(doc.info.version).toBe(pkg.version);
    expect(JSON.parse(openApiJson())).toEqual(parse(text));
  });

  it('ships in the package: the build copies it into dist/', () => {
    const dist = new URL('dist/openapi/tollgate.openapi.yaml', ROOT);
    expect(readFileSync(dist, 'utf8'), 'dist/ is stale: npm run build').toBe(text);
    const packed = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' })) as Array<{ files: Array<{ path: string }> }>;
    const files = packed[0]!.files.map((f) => f.path);
    expect(files).toContain('dist/openapi/tollgate.openapi.yaml');
    expect(files).toContain('dist/http/api-docs.js');
  }, 30_000);
});
