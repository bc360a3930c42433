import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createKey, KeyInputError, keyView, parseKeyInput, rotateKey, SCOPE_ENDPOINTS, updateKey, type KeyInput } from '../admin/keys.js';
import { budgetsView } from '../admin/teams.js';
import { withReached } from './alerts.js';
import { STRATEGIES } from '../domain/endpoints.js';
import type { ApiKey, KeyPatch } from '../domain/keys.js';
import { errorPage, frameOf, noticeOf, sessionOf, show, type DashboardDeps } from './context.js';
import { field, fields, FormProblem, formOf, seeOther, type Form } from './http.js';

/*
 * Keys: the list (team, state, last use, limits, budget use), create (the secret shown once),
 * edit, rotate with an overlap, revoke after a confirmation. Validation is the admin API's
 * (admin/keys.ts): a bad field re-renders the form with its message and what was typed.
 */

const NOTICES = { updated: 'Key updated.', unchanged: 'Nothing changed.', revoked: 'Key revoked: it is refused from now on.' };

/**
 * The form's fields as the admin API's input. Empty rate/credits on create: `keys.defaults`; on
 * edit: none. The form always sends its text fields (empty when cleared), so on edit one that is
 * missing is refused: read as empty, it cleared the key's limits, team or expiry.
 */
function keyInput(form: Form, creating: boolean): KeyInput {
  const text = (name: string) => {
    const v = field(form, name);
    if (v === undefined && !creating) throw new FormProblem(`${name}: missing from the form (send it empty to clear it)`);
    return v ?? '';
  };
  const orNone = (v: string, none: string) => (v === '' ? (creating ? undefined : none) : v);
  // Every box ticked is "all" (no list, so endpoints added later are included too). Counting
  // the values was not enough: `endpoints=profile` five times, or four known values and one
  // unknown, made a key scoped to nothing less than all, where a list (and its check) was meant.
  const all = (name: string, every: readonly string[]) => {
    const picked = fields(form, name);
    return every.every((v) => picked.includes(v)) && picked.every((v) => every.includes(v)) ? 'all' : picked;
  };
  return {
    name: text('name'),
    team: text('team') === '' ? null : text('team'),
    rate: orNone(text('rate'), 'none'),
    credits: orNone(text('credits'), 'none'),
    endpoints: all('endpoints', SCOPE_ENDPOINTS),
    strategies: all('strategies', STRATEGIES),
    expires_at: text('expires_at') === '' ? null : text('expires_at'),
    cache_isolated: field(form, 'cache_isolated') === 'on',
  };
}

const INPUT_OF: ReadonlyArray<[keyof KeyPatch, keyof KeyInput]> = [
  ['name', 'name'], ['team', 'team'], ['rate', 'rate'], ['credits', 'credits'], ['endpoints', 'endpoints'],
  ['strategies', 'strategies'], ['expiresAt', 'expires_at'], ['cacheIsolated', 'cache_isolated'],
];

/** Only the fields whose value would change, so that the audit log records what was changed, and nothing for a no-op. */
function changes(input: KeyInput, k: ApiKey): KeyInput {
  const p = parseKeyInput(input);
  const norm = (v: unknown) => JSON.stringify(Array.isArray(v) ? [...(v as string[])].sort() : v);
  const out: Record<string, unknown> = {};
  for (const [patchField, inputField] of INPUT_OF) {
    if (p[patchField] !== undefined && norm(p[patchField]) !== norm(k[patchField])) out[inputField] = input[inputField];
  }
  return out as KeyInput;
}

/** What the key form shows: the key's values (or what was typed), as text. */
function formValues(k: ReturnType<typeof keyView> | null, form: Form | null) {
  if (form) {
    return {
      name: field(form, 'name') ?? '', team: field(form, 'team') ?? '', rate: field(form, 'rate') ?? '', credits: field(form, 'credits') ?? '',
      endpoints: fields(form, 'endpoints'), strategies: fields(form, 'strategies'), expires_at: field(form, 'expires_at') ?? '', cache_isolated: field(form, 'cache_isolated') === 'on',
    };
  }
  return {
    name: k?.name ?? '', team: k?.team ?? '', rate: k?.rate ?? '', credits: k?.credits ?? '',
    endpoints: k?.endpoints ?? SCOPE_ENDPOINTS, strategies: k?.strategies ?? STRATEGIES, expires_at: k?.expires_at ?? '', cache_isolated: k?.cache_isolated ?? false,
  };
}

const messageOf = (err: KeyInputError) => `${err.field.replace('_', ' ')}: ${err.message}.`.replace(/\.\.$/, '.');

export function registerKeys(app: FastifyInstance, deps: DashboardDeps): void {
  const { keys } = deps.backend;
  const now = () => deps.clock.now();
  const scopes = { endpoints: SCOPE_ENDPOINTS, strategies: STRATEGIES };

  const newForm = (request: FastifyRequest, reply: FastifyReply, status: number, error: string | null, form: Form | null) =>
    show(request, reply, 'key-new', frameOf(request, 'Create key', 'keys', { error }), { values: formValues(null, form), scopes, defaults: deps.config.keys.defaults }, status);

  const editForm = async (request: FastifyRequest, reply: FastifyReply, k: ApiKey, status: number, error: string | null, form: Form | null) =>
    show(request, reply, 'key-edit', frameOf(request, `Key ${k.name}`, 'keys', { error }), { key: keyView(k, now()), values: formValues(keyView(k, now()), form), scopes }, status);

  const secretPage = (request: FastifyRequest, reply: FastifyReply, title: string, k: ApiKey, secret: string, status: number) =>
    show(request, reply, 'key-secret', frameOf(request, title, 'keys'), { key: keyView(k, now()), secret }, status);

  const mustGet = async (request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
    const k = await keys.get(request.params.id);
    if (!k) void errorPage(request, reply, 404, `No key with id ${request.params.id}.`, 'NOT_FOUND', '/dashboard/keys');
    return k;
  };

  app.get('/keys', async (request, reply) => {
    const t = now();
    const thresholds = deps.config.notifications.thresholds;
    const all = await keys.list();
    const rows = await Promise.all(all.map(async (k) => ({ ...keyView(k, t), budgets: withReached(budgetsView(await deps.accounting.keyStates(k, t)), thresholds) })));
    return show(request, reply, 'keys', frameOf(request, 'Keys', 'keys', { notice: noticeOf(request, NOTICES) }), { rows });
  });

  app.get('/keys/new', async (request, reply) => newForm(request, reply, 200, null, null));

  app.post('/keys', async (request, reply) => {
    const form = formOf(request);
    try {
      const { key, secret } = await createKey(keys, deps.config.keys.defaults, keyInput(form, true), sessionOf(request).actor);
      // The secret is on this answer only (no-store): never in a URL, never kept to show after a redirect.
      return secretPage(request, reply, 'Key created', key, secret, 201);
    } catch (err) {
      if (err instanceof KeyInputError) return newForm(request, reply, 400, messageOf(err), form);
      throw err;
    }
  });

  app.get<{ Params: { id: string } }>('/keys/:id', async (request, reply) => {
    const k = await mustGet(request, reply);
    return k ? editForm(request, reply, k, 200, null, null) : reply;
  });

  app.post<{ Params: { id: string } }>('/keys/:id', async (request, reply) => {
    const k = await mustGet(request, reply);
    if (!k) return reply;
    const form = formOf(request);
    try {
      const input = changes(keyInput(form, false), k);
      if (Object.keys(input).length === 0) return seeOther(reply, '/dashboard/keys?done=unchanged');
      await updateKey(keys, k.id, input, sessionOf(request).actor);
      return seeOther(reply, '/dashboard/keys?done=updated');
    } catch (err) {
      if (err instanceof KeyInputError) return editForm(request, reply, k, 400, messageOf(err), form);
      throw err;
    }
  });

  app.post<{ Params: { id: string } }>('/keys/:id/rotate', async (request, reply) => {
    const k = await mustGet(request, reply);
    if (!k) return reply;
    try {
      const r = await rotateKey(keys, k.id, field(formOf(request), 'overlap') || '0', sessionOf(request).actor);
      if (!r.ok) return errorPage(request, reply, 409, `Key ${k.name} is revoked; create a new key instead.`, 'CONFLICT', '/dashboard/keys');
      return secretPage(request, reply, 'Key rotated', r.key, r.secret, 200);
    } catch (err) {
      if (err instanceof KeyInputError) return editForm(request, reply, k, 400, messageOf(err), null);
      throw err;
    }
  });

  app.get<{ Params: { id: string } }>('/keys/:id/revoke', async (request, reply) => {
    const k = await mustGet(request, reply);
    return k ? show(request, reply, 'key-revoke', frameOf(request, `Revoke key ${k.name}?`, 'keys'), { key: keyView(k, now()) }) : reply;
  });

  app.post<{ Params: { id: string } }>('/keys/:id/revoke', async (request, reply) => {
    const k = await mustGet(request, reply);
    if (!k) return reply;
    await keys.revoke(k.id, sessionOf(request).actor);
    return seeOther(reply, '/dashboard/keys?done=revoked');
  });
}
