import type { EndpointName } from '../domain/endpoints.js';
import type { Clock } from '../domain/clock.js';

export interface SimulatorOptions {
  /** Default 0 (ephemeral). */
  port?: number;
  /** Default '127.0.0.1'. */
  host?: string;
  /** The one accepted provider key; default 'sim_provider_key'. */
  apiKey?: string;
  /** For the simulator's own cache ages and rate-limit windows; default systemClock. */
  clock?: Clock;
  /** Added to every answer; default 0. */
  latencyMs?: number;
  /** Default cached 1; fresh profile 3, company 3, profile_posts 2, company_posts 2. */
  credits?: { cached: number; fresh: Record<EndpointName, number> };
  /** Provider-side rate limit per key; default none (headers still sent with a large limit). */
  rateLimit?: { limit: number; windowMs: number };
}

export type Fault =
  /**
   * The status with the provider's error envelope. `credits`: a provider that bills the failed
   * request (a not-found lookup, say): its envelope also carries `meta.credits_used` and the
   * simulator counts it charged.
   */
  | { kind: 'status'; status: number; code?: string; message?: string; retryAfter?: number; credits?: number }
  | { kind: 'latency'; ms: number }
  | { kind: 'malformed' }
  | { kind: 'bad-envelope' }
  /** A normal answer, charged as usual, whose meta does not say so (no `credits_used`): a provider breaking spec §8.3. */
  | { kind: 'unreported-credits' }
  | { kind: 'reset' }
  | { kind: 'hang' }
  | { kind: 'slow-body'; ms: number }
  /** A normal answer, charged as usual, whose connection is destroyed after the headers and half the body. */
  | { kind: 'cut-body' }
  | { kind: 'huge'; bytes: number }
  /**
   * A normal answer, charged as usual, sent with `Content-Encoding: gzip` or `deflate` whatever
   * the request's Accept-Encoding said, and `chunked`: without Content-Length, in several chunks.
   */
  | { kind: 'encoded'; coding: 'gzip' | 'deflate' | 'identity'; chunked?: boolean };

export interface FaultRule {
  fault: Fault;
  /** Default Infinity. */
  times?: number;
  /** Only this /v1 path. */
  path?: string;
  /** Only when the raw query string contains this substring. */
  match?: string;
}

export interface SimCall {
  method: string;
  path: string;
  /** Raw, without '?'. */
  query: string;
  authorization: string | undefined;
  /** Every request header as received (a test reads the X-Request-Id or the traceparent a gateway sent). */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  at: number;
}

export interface Simulator {
  /** e.g. http://127.0.0.1:43123 (no trailing slash). */
  readonly url: string;
  readonly port: number;
  /** Every request that reached the server, in order (including rejected ones). */
  readonly calls: SimCall[];
  callCount(path?: string): number;
  /** Rules are checked in insertion order; the first matching rule with times left applies. */
  inject(rule: FaultRule): void;
  clearFaults(): void;
  /** Clears calls, faults and the simulator's own cache. */
  reset(): void;
  /** Total credits reported in meta.credits_used of all answers (2xx, and faults' charged errors). */
  creditsCharged(): number;
  /** Also ends hanging requests and keep-alive sockets promptly. */
  close(): Promise<void>;
}

export interface SimStats {
  calls: number;
  credits_charged: number;
  by_path: Record<string, number>;
}

export const DEFAULT_API_KEY = 'sim_provider_key';

export const DEFAULT_CREDITS: { cached: number; fresh: Record<EndpointName, number> } = {
  cached: 1,
  fresh: { profile: 3, company: 3, profile_posts: 2, company_posts: 2 },
};
