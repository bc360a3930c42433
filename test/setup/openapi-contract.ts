import { afterAll, afterEach, beforeAll } from 'vitest';
import { getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import { contractCheck, takeViolations } from '../helpers/contract-interceptor.js';

/**
 * Every answer to a /v1 or /admin target, or to an operations route, that a test receives
 * through undici's global dispatcher (`request()`, `fetch()`) is checked against
 * src/openapi/tollgate.openapi.yaml (test/helpers/openapi-contract.ts): an answer the document
 * does not describe fails the test that received it — or, for a call made in a
 * beforeAll/afterAll hook, the file. The
 * answers are observed, never altered. Not covered: raw-socket exchanges
 * (test/helpers/raw-http.ts) and dispatchers a test makes itself unless it composes
 * `contractCheck`.
 */

/**
 * The provider simulator's own tests: its answers are the provider's (injected faults included),
 * not Tollgate's. The benchmark tools' tests: a bare server stands in for the gateway's /metrics,
 * and the anchors of the benchmarks answer /v1 as bare servers (some with the provider's bodies), not as Tollgate.
 */
const EXEMPT = [
  /\/test\/integration\/simulator\.test\.ts$/,
  /\/test\/unit\/bench-tail-tools\.test\.ts$/,
  /\/test\/unit\/bench-scale-anchor\.test\.ts$/,
  /\/test\/integration\/bench-miss-anchor\.test\.ts$/,
];

const INSTALLED = Symbol.for('tollgate.openapiContract');

// Vitest passes the file's suite second; its first argument must be a destructuring pattern.
// eslint-disable-next-line no-empty-pattern
beforeAll(({}, suite) => {
  const path = suite.file?.filepath ?? '';
  if (EXEMPT.some((re) => re.test(path))) return;
  const current = getGlobalDispatcher() as ReturnType<typeof getGlobalDispatcher> & { [INSTALLED]?: true };
  if (current[INSTALLED]) return;
  const checked = Object.assign(current.compose(contractCheck), { [INSTALLED]: true as const });
  setGlobalDispatcher(checked);
});

function failOnViolations(when: string): void {
  const seen = takeViolations();
  if (seen.length > 0) {
    throw new Error(`${seen.length} answer(s) ${when} do not match the OpenAPI document (src/openapi/tollgate.openapi.yaml):\n  ${seen.slice(0, 20).join('\n  ')}`);
  }
}

afterEach(() => failOnViolations('received by this test'));
afterAll(() => failOnViolations('received outside a test (beforeAll/afterAll)'));
