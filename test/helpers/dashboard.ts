import { afterAll, beforeAll } from 'vitest';
import { startStack, type Reply, type Stack } from './stack.js';

/** What a browser's navigations and form posts send: the dashboard answers its errors as pages to it, and as the JSON envelope to other clients. */
export const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

/** A signed-in dashboard session over plain HTTP: pages read with its cookie, forms posted from this origin with its CSRF token. */
export interface DashboardSession {
  get(path: string, method?: string): Promise<Reply>;
  post(path: string, fields: Record<string, string | string[]>, opts?: { csrf?: string | null }): Promise<Reply>;
  /** A form body sent as given (its CSRF token included by the caller): bytes no browser would send. */
  postRaw(path: string, body: string): Promise<Reply>;
  readonly csrf: string;
}

export async function dashboardSession(s: Stack, token: string): Promise<DashboardSession> {
  const origin = new URL(s.url).origin;
  const headers = (cookie?: string) => ({ 'content-type': 'application/x-www-form-urlencoded', accept: BROWSER_ACCEPT, origin, 'sec-fetch-site': 'same-origin', ...(cookie ? { cookie } : {}) });
  const signIn = await s.get('/dashboard/sign-in', { key: null, method: 'POST', headers: headers(), body: new URLSearchParams({ token }).toString() });
  if (signIn.status !== 303) throw new Error(`sign-in answered ${signIn.status}`);
  const cookie = String(signIn.headers['set-cookie']).split(';')[0]!;
  const get = (path: string, method = 'GET') => s.get(path, { key: null, method, headers: { cookie, accept: BROWSER_ACCEPT } });
  const csrf = /name="_csrf" value="([^"]+)"/.exec((await get('/dashboard/keys')).text)![1]!;
  return {
    get,
    csrf,
    post(path, fields, opts = {}) {
      const body = new URLSearchParams();
      const token = opts.csrf === undefined ? csrf : opts.csrf;
      for (const [k, v] of Object.entries({ ...fields, ...(token !== null && { _csrf: token }) })) for (const x of Array.isArray(v) ? v : [v]) body.append(k, x);
      return s.get(path, { key: null, method: 'POST', headers: headers(cookie), body: body.toString() });
    },
    postRaw(path, body) {
      return s.get(path, { key: null, method: 'POST', headers: headers(cookie), body });
    },
  };
}

/**
 * For a test file: a stack with the dashboard on (`token` its admin token) and a signed-in
 * session, started before its tests and closed after them. Read `on.s` and `on.d` inside tests.
 */
export function dashboardStack(token: string): { readonly s: Stack; readonly d: DashboardSession } {
  const on = {} as { s: Stack; d: DashboardSession };
  beforeAll(async () => {
    on.s = await startStack({ config: { adminToken: token } });
    on.d = await dashboardSession(on.s, token);
  });
  afterAll(async () => on.s?.close());
  return on;
}
