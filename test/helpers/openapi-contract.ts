import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';

/**
 * The contract check of test/setup/openapi-contract.ts: is an answer Tollgate gave one that
 * src/openapi/tollgate.openapi.yaml documents? The status must be documented for the
 * operation (or its `4XX` range), every header the document marks required must be there and
 * every documented header present must match its schema, the body must match the schema of
 * its media type, and X-Request-Id must be the body's request id. Targets that match no
 * documented path or method are judged by `components.pathItems.OtherV1Target` (under /v1)
 * or `OtherTarget`; HEAD by the GET operation, without a body.
 */

export const DOCUMENT_PATH = new URL('../../src/openapi/tollgate.openapi.yaml', import.meta.url);

type Node = Record<string, unknown>;

/** One answer as the client saw it. */
export interface SeenAnswer {
  readonly method: string;
  /** The request target: path and query. */
  readonly target: string;
  readonly status: number;
  /** Lower-case names, as undici gives them. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

/** Whether the contract covers a request target: /v1 and /admin as the gateway routes them, and the operations routes. */
export function inContract(target: string): boolean {
  return /^\/(v1|admin)(\/|\?|$)/.test(target) || /^\/(healthz|readyz|metrics|openapi\.json|docs)(\?|$)/.test(target);
}

// ajv-formats is CommonJS with a default export; under NodeNext it arrives as the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
const esc = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

export class OpenApiContract {
  readonly doc: Node;
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly exact = new Map<string, string>();
  private readonly templated: Array<{ re: RegExp; path: string }> = [];

  constructor(text: string = readFileSync(DOCUMENT_PATH, 'utf8')) {
    this.doc = parse(text) as Node;
    addFormats(this.ajv);
    // The whole document is one schema resource: every '#/components/…' pointer resolves in it.
    this.ajv.addSchema(this.doc, 'tollgate');
    for (const path of Object.keys(this.doc.paths as Node)) {
      if (!path.includes('{')) this.exact.set(path, path);
      else this.templated.push({ re: new RegExp('^' + path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+') + '$'), path });
    }
  }

  /** The violations of one answer, as text naming the request; empty when it is documented. */
  check(a: SeenAnswer): string[] {
    const out = this.violations(a);
    const what = `${a.method} ${a.target.length > 120 ? a.target.slice(0, 120) + '…' : a.target} → ${a.status}`;
    return out.map((v) => `${what}: ${v}`);
  }

  /**
   * Compile now every validator an answer of `method target → status` will use (its headers
   * and its JSON body): the first compile in a process takes ~0.5 s, which a test hosting the
   * gateway in its own process would otherwise pay in the middle of what it times.
   */
  prepare(method: string, target: string, status: number): void {
    const documented = this.response(method, target, status);
    if ('missing' in documented) return;
    const { response, pointer } = documented;
    for (const [name, ref] of Object.entries((response.headers ?? {}) as Node)) this.validator(`${this.deref(ref as Node, `${pointer}/headers/${esc(name)}`).pointer}/schema`);
    for (const media of Object.keys((response.content ?? {}) as Node)) if (/[/+]json$/.test(media)) this.validator(`${pointer}/content/${esc(media)}/schema`);
  }

  private violations(a: SeenAnswer): string[] {
    const documented = this.response(a.method, a.target, a.status);
    if ('missing' in documented) return [documented.missing];
    const { response, pointer } = documented;
    const out = this.headerViolations(response, pointer, a.headers);
    if (a.method !== 'HEAD') out.push(...this.bodyViolations(response, pointer, a));
    return out;
  }

  /** The Response Object documented for `method target → status`, and its pointer; or why there is none. */
  private response(method: string, target: string, status: number): { response: Node; pointer: string } | { missing: string } {
    const op = this.operation(method, target.split('?')[0]!);
    const responses = this.deref(op.node.responses as Node).node;
    const key = [String(status), `${String(status)[0]}XX`, 'default'].find((k) => responses[k] !== undefined);
    if (key === undefined) return { missing: `status ${status} is not documented for ${op.name}` };
    const { node: response, pointer } = this.deref(responses[key] as Node, `${op.pointer}/responses/${esc(key)}`);
    return { response, pointer };
  }

  /** The documented operation for a method and path, or the fallback path item's. */
  private operation(method: string, path: string): { node: Node; pointer: string; name: string } {
    const m = method.toLowerCase();
    const wanted = m === 'head' ? ['head', 'get'] : [m];
    const documented = this.exact.get(path) ?? this.templated.find((t) => t.re.test(path))?.path;
    const paths = this.doc.paths as Record<string, Node>;
    for (const w of wanted) {
      if (documented !== undefined && METHODS.has(w) && paths[documented]![w]) {
        return { node: paths[documented]![w] as Node, pointer: `#/paths/${esc(documented)}/${w}`, name: `${w.toUpperCase()} ${documented}` };
      }
    }
    const item = /^\/v1(\/|$)/.test(path) ? 'OtherV1Target' : 'OtherTarget';
    const items = (this.doc.components as Node).pathItems as Record<string, Node>;
    for (const w of wanted) {
      if (items[item]![w]) return { node: items[item]![w] as Node, pointer: `#/components/pathItems/${item}/${w}`, name: `${item} ${w.toUpperCase()}` };
    }
    return { node: { responses: {} }, pointer: '#', name: `${method} ${path} (no operation)` };
  }

  private headerViolations(response: Node, pointer: string, got: SeenAnswer['headers']): string[] {
    const out: string[] = [];
    for (const [name, ref] of Object.entries((response.headers ?? {}) as Node)) {
      const { node: header, pointer: at } = this.deref(ref as Node, `${pointer}/headers/${esc(name)}`);
      const raw = got[name.toLowerCase()];
      if (raw === undefined) {
        if (header.required === true) out.push(`required header ${name} is missing`);
        continue;
      }
      const value = Array.isArray(raw) ? raw.join(', ') : raw;
      const validate = this.validator(`${at}/schema`);
      // Header values are text; a schema of a number judges the number the text spells.
      if (!validate(value) && !(/^-?\d+$/.test(value) && validate(Number(value)))) out.push(`header ${name}: ${JSON.stringify(value)} ${this.errors(validate)}`);
    }
    return out;
  }

  private bodyViolations(response: Node, pointer: string, a: SeenAnswer): string[] {
    const content = response.content as Record<string, Node> | undefined;
    if (!content) return a.body === '' ? [] : ['a body where none is documented'];
    const type = String(a.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const media = content[type] !== undefined ? type : content['*/*'] !== undefined ? '*/*' : undefined;
    if (media === undefined) return [`content type ${JSON.stringify(type)} is not documented (${Object.keys(content).join(', ')})`];
    if (!/[/+]json$/.test(media)) return [];
    let body: unknown;
    try {
      body = JSON.parse(a.body);
    } catch {
      return [`the body is not JSON: ${JSON.stringify(a.body.slice(0, 80))}`];
    }
    const out: string[] = [];
    const validate = this.validator(`${pointer}/content/${esc(media)}/schema`);
    if (!validate(body)) out.push(`body ${this.errors(validate)}`);
    const b = body as { request_id?: unknown; error?: { request_id?: unknown } } | null;
    const id = typeof b?.request_id === 'string' ? b.request_id : typeof b?.error?.request_id === 'string' ? b.error.request_id : undefined;
    if (id !== undefined && a.headers['x-request-id'] !== undefined && a.headers['x-request-id'] !== id) out.push(`X-Request-Id ${String(a.headers['x-request-id'])} is not the body's request id ${id}`);
    return out;
  }

  /** A Reference Object's target and its pointer; any other node as it is. */
  private deref(node: Node, pointer = ''): { node: Node; pointer: string } {
    let n = node;
    let p = pointer;
    while (typeof n.$ref === 'string') {
      p = n.$ref;
      n = p
        .slice(2)
        .split('/')
        .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
        .reduce<Node>((at, k) => at[k] as Node, this.doc);
    }
    return { node: n, pointer: p };
  }

  private validator(pointer: string): ValidateFunction {
    let v = this.validators.get(pointer);
    if (!v) {
      // A JSON pointer in a URI fragment: each segment percent-encoded ('{id}', '*/*').
      v = this.ajv.compile({ $ref: 'tollgate#' + pointer.slice(1).split('/').map(encodeURIComponent).join('/') });
      this.validators.set(pointer, v);
    }
    return v;
  }

  private errors(v: ValidateFunction): string {
    return (v.errors ?? [])
      .slice(0, 4)
      .map((e) => {
        const allowed = e.params && 'allowedValues' in e.params ? e.params.allowedValues : e.params && 'allowedValue' in e.params ? e.params.allowedValue : undefined;
        return `${e.instancePath || '/'} ${e.message ?? ''}${allowed === undefined ? '' : ` ${JSON.stringify(allowed)}`}`;
      })
      .join('; ');
  }
}
