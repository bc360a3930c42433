/**
 * Fault rules: a queue of "next N matching requests misbehave like this". Checked in
 * insertion order so a test can stack e.g. one 512 followed by a permanent latency.
 */
import { ERROR_CODES, type Failure } from '../domain/errors.js';
import type { Fault, FaultRule } from './types.js';

interface Slot {
  readonly rule: FaultRule;
  left: number;
}

const DEFAULT_CODES: Record<number, string> = {
  400: 'INVALID_PARAMETER',
  401: 'INVALID_API_KEY',
  403: 'ACCESS_DENIED',
  404: 'NOT_FOUND',
  429: 'RATE_LIMIT_EXCEEDED',
  500: 'INTERNAL_ERROR',
  502: 'UPSTREAM_ERROR',
  503: 'SERVICE_UNAVAILABLE',
  512: 'TEMPORARY_FETCH_FAILURE',
  513: 'SOURCE_NOT_FOUND',
};

/**
 * A 512 is what the provider reports when fetching from the source fails; for `besteffort`
 * the provider absorbs it with its stale copy, so such rules act at fetch time, not up front.
 */
export function isSourceFailure(f: Fault): boolean {
  return f.kind === 'status' && f.status === 512;
}

export function statusFailure(f: Extract<Fault, { kind: 'status' }>): Failure {
  const code = f.code ?? DEFAULT_CODES[f.status] ?? 'SIMULATED_ERROR';
  const known = (ERROR_CODES as Record<string, { message: string } | undefined>)[code];
  const message = f.message ?? known?.message ?? `Simulated status ${f.status}.`;
  // Clients are told to wait on 429; a 429 without Retry-After would be a different fault.
  const retryAfter = f.retryAfter ?? (f.status === 429 ? 1 : undefined);
  return retryAfter === undefined
    ? { status: f.status, code, message }
    : { status: f.status, code, message, headers: { 'Retry-After': String(retryAfter) } };
}

export class FaultBook {
  private slots: Slot[] = [];

  add(rule: FaultRule): void {
    this.slots.push({ rule, left: rule.times ?? Infinity });
  }

  clear(): void {
    this.slots = [];
  }

  /** Consume and return the first applicable fault; `accept` narrows which faults may apply. */
  take(path: string, query: string, accept: (f: Fault) => boolean = () => true): Fault | undefined {
    for (const slot of this.slots) {
      const r = slot.rule;
      if (slot.left <= 0) continue;
      if (r.path !== undefined && r.path !== path) continue;
      if (r.match !== undefined && !query.includes(r.match)) continue;
      if (!accept(r.fault)) continue;
      slot.left--;
      return r.fault;
    }
    return undefined;
  }
}

const nonNegInt = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0;

function parseFault(x: Record<string, unknown>): Fault | string {
  switch (x.kind) {
    case 'status': {
      if (!nonNegInt(x.status) || x.status < 100 || x.status > 599) return 'fault.status must be 100..599';
      if (x.code !== undefined && typeof x.code !== 'string') return 'fault.code must be a string';
      if (x.message !== undefined && typeof x.message !== 'string') return 'fault.message must be a string';
      if (x.retryAfter !== undefined && !nonNegInt(x.retryAfter)) return 'fault.retryAfter must be an integer ≥ 0';
      if (x.credits !== undefined && !nonNegInt(x.credits)) return 'fault.credits must be an integer ≥ 0';
      const f: Fault = { kind: 'status', status: x.status };
      if (x.credits !== undefined) f.credits = x.credits as number;
      if (x.code !== undefined) f.code = x.code as string;
      if (x.message !== undefined) f.message = x.message as string;
      if (x.retryAfter !== undefined) f.retryAfter = x.retryAfter as number;
      return f;
    }
    case 'latency':
    case 'slow-body':
      return nonNegInt(x.ms) ? { kind: x.kind, ms: x.ms } : 'fault.ms must be an integer ≥ 0';
    case 'encoded':
      if (x.coding !== 'gzip' && x.coding !== 'deflate' && x.coding !== 'identity') return 'fault.coding must be gzip, deflate or identity';
      if (x.chunked !== undefined && typeof x.chunked !== 'boolean') return 'fault.chunked must be a boolean';
      return x.chunked === undefined ? { kind: 'encoded', coding: x.coding } : { kind: 'encoded', coding: x.coding, chunked: x.chunked };
    case 'huge':
      return nonNegInt(x.bytes) ? { kind: 'huge', bytes: x.bytes } : 'fault.bytes must be an integer ≥ 0';
    case 'malformed':
    case 'bad-envelope':
    case 'unreported-credits':
    case 'cut-body':
    case 'reset':
    case 'hang':
      return { kind: x.kind };
    default:
      return `unknown fault kind ${JSON.stringify(x.kind)}`;
  }
}

/** Validates a rule arriving over the control plane; returns an error text when invalid. */
export function parseFaultRule(x: unknown): FaultRule | string {
  if (typeof x !== 'object' || x === null) return 'body must be a JSON object';
  const o = x as Record<string, unknown>;
  if (typeof o.fault !== 'object' || o.fault === null) return 'fault is required';
  const fault = parseFault(o.fault as Record<string, unknown>);
  if (typeof fault === 'string') return fault;
  const rule: FaultRule = { fault };
  if (o.times !== undefined && o.times !== null) {
    if (!nonNegInt(o.times)) return 'times must be an integer ≥ 0';
    rule.times = o.times;
  }
  if (o.path !== undefined) {
    if (typeof o.path !== 'string') return 'path must be a string';
    rule.path = o.path;
  }
  if (o.match !== undefined) {
    if (typeof o.match !== 'string') return 'match must be a string';
    rule.match = o.match;
  }
  return rule;
}
