import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AdminDeps } from '../admin/routes.js';
import { failure, type RegistryCode } from '../domain/errors.js';
import { sendFailure } from '../admin/reply.js';
import type { StorageBackend } from '../store/backend.js';
import { page, type Frame, type NavPage } from './render.js';
import type { SignedIn } from './session.js';

/** What the dashboard is built from: the admin API's dependencies, and the sessions. */
export interface DashboardDeps extends AdminDeps {
  readonly backend: AdminDeps['backend'] & Pick<StorageBackend, 'sessions'>;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The dashboard's session, set before a signed-in route's handler runs (index.ts). */
    dashboardSession: SignedIn | null;
  }
}

/** The session of a request that passed the sign-in check (every route but sign-in and the assets). */
export function sessionOf(request: FastifyRequest): SignedIn {
  const s = request.dashboardSession;
  if (!s) throw new Error('dashboard route reached without a session');
  return s;
}

/** The frame of a signed-in page. */
export function frameOf(request: FastifyRequest, title: string, nav: NavPage, extra: Partial<Frame> = {}): Frame {
  return { title, nav, csrf: sessionOf(request).csrf, ...extra };
}

/** A page of the signed-in dashboard. */
export function show<T extends object>(request: FastifyRequest, reply: FastifyReply, view: string, frame: Frame, data: T, status = 200) {
  return page(reply, status, view, frame, data);
}

/** Whether the client asked for a page (a browser's navigations and forms send `Accept: text/html…`). */
function wantsHtml(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  return typeof accept === 'string' && /\btext\/html\b/i.test(accept);
}

/**
 * An error page: what went wrong, its code, the request id, and the way back. A client that did
 * not ask for HTML (curl, a script, a probe) gets the gateway's error envelope instead, as on
 * every other route: the same status, code, message and X-Request-Id.
 */
export function errorPage(request: FastifyRequest, reply: FastifyReply, status: number, message: string, code: RegistryCode, back = '/dashboard') {
  if (!wantsHtml(request)) {
    request.errorCode = code;
    return sendFailure(reply, { ...failure(code, message), status });
  }
  const s = request.dashboardSession;
  const frame: Frame = { title: status === 403 ? 'Request refused' : status === 404 ? 'Not found' : status >= 500 ? 'Something went wrong' : 'Not possible', nav: s ? '' : null, csrf: s?.csrf ?? null };
  if (code) request.errorCode = code;
  return page(reply, status, 'error', frame, { message, code, requestId: request.id, back });
}

/**
 * A notice chosen by a fixed name in the URL after a redirect (`?done=created`): never text
 * from the URL itself, so a crafted link cannot make the page say anything else.
 */
export function noticeOf(request: FastifyRequest, notices: Readonly<Record<string, string>>): string | null {
  const done = (request.query as Record<string, unknown> | undefined)?.done;
  return typeof done === 'string' && Object.hasOwn(notices, done) ? notices[done]! : null;
}
