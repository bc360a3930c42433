import { z } from 'zod';
import { ADMIN_API_ACTOR, CLI_ACTOR } from './domain/audit.js';
import { trustedProxies } from './domain/trusted-proxies.js';
import { DEFAULT_NETWORK_DOMAIN } from './domain/identity.js';
import { LimitsSchemas } from './config-limits.js';
import { NotificationsSchema } from './config-notifications.js';
import { ms } from './config-timers.js';

/**
 * The configuration's shape: every option, its default and its bounds, checked with the same
 * parsers the rest of the gateway uses. Every option is documented in
 * config/tollgate.example.yaml (a test keeps them in step). Loading and validating is config.ts's;
 * each option's environment variable is derived from this shape (config-env.ts). Options
 * `tollgate config check` must mask carry `.meta({ sensitive: 'secret' | 'url' })` (a test
 * holds every token, key and URL option to it).
 */

const nonNeg = z.number().int().min(0);

/**
 * A token sent as `Authorization: Bearer <token>` (the admin and metrics tokens), or null.
 * Visible ASCII only: a space, a line end (a secret copied with its newline) or a non-ASCII
 * character cannot be sent as one Bearer token, so such a token would refuse every call as
 * a wrong one.
 */
const bearerSecret = () =>
  z
    .string()
    .min(16, 'must be at least 16 characters')
    .regex(/^[\x21-\x7e]*$/, 'must be visible ASCII characters without spaces or line ends: it is sent as a Bearer token in the Authorization header')
    .meta({ sensitive: 'secret' })
    .nullable()
    .default(null);

const UpstreamSchema = z.strictObject({
  url: z
    .url({ protocol: /^https?$/ })
    // Tollgate appends the /v1/... path itself: a URL ending in /v1 would call /v1/v1/profile.
    // Zod runs this after z.url refused a URL too: such a one is left to that issue, since the
    // TypeError of new URL would carry it, password included, to stderr. The suggestion keeps
    // the password out, as every message does.
    .superRefine((u, ctx) => {
      if (!URL.canParse(u)) return;
      const url = new URL(u);
      if (!/\/v1\/*$/i.test(url.pathname)) return;
      if (url.password !== '') url.password = '********';
      ctx.addIssue({ code: 'custom', message: `must be the provider's base URL, without /v1: set it to ${url.href.replace(/\/v1\/*$/i, '')}` });
    })
    .meta({ sensitive: 'url' })
    .nullable()
    .default(null),
  apiKey: z.string().min(1).meta({ sensitive: 'secret' }).nullable().default(null),
  connectTimeoutMs: ms.default(5_000),
  headersTimeoutMs: ms.default(20_000),
  bodyTimeoutMs: ms.default(20_000),
  deadlineMs: ms.default(30_000),
  maxResponseBytes: ms.default(8 * 1024 * 1024),
  connections: z.number().int().min(1).max(1024).default(32),
  keepAliveTimeoutMs: ms.default(30_000),
  retries: z
    .strictObject({
      temporary: nonNeg.max(10).default(2),
      connection: nonNeg.max(10).default(1),
      baseDelayMs: ms.default(200),
      maxDelayMs: ms.default(2_000),
    })
    .prefault({}),
  /** Failure-rate breaker (src/upstream/breaker.ts): only 5xx, timeouts and connection failures count. */
  breaker: z
    .strictObject({
      windowMs: ms.default(30_000),
      minimumCalls: z.number().int().min(1).default(10),
      failureRatePercent: z.number().int().min(1).max(100).default(50),
      minimumEntities: z.number().int().min(1).default(5),
      cooldownMs: ms.default(30_000),
      halfOpenProbes: z.number().int().min(1).max(100).default(5),
    })
    .prefault({}),
  maxConcurrency: z.number().int().min(1).max(1024).default(32),
  /** The share of maxConcurrency one team (or a key without a team) may hold at once (src/upstream/shaper.ts). */
  teamSharePercent: z.number().int().min(1).max(100).default(50),
  queueSize: nonNeg.default(1_000),
  rateLimit: z.strictObject({ count: z.number().int().min(1), perMs: ms }).nullable().default(null),
  /** Provider-wide credit budget per UTC day and month; null = unlimited. */
  budget: z
    .strictObject({ day: nonNeg.nullable().default(null), month: nonNeg.nullable().default(null) })
    .prefault({}),
});

function checkProxyEntry(v: string, ctx: z.RefinementCtx): void {
  try {
    trustedProxies([v]);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
  }
}

const ServerSchema = z.strictObject({
  host: z.string().min(1).default('0.0.0.0'),
  port: z.number().int().min(0).max(65535).default(8080),
  /**
   * Proxies (IPs or CIDRs) whose X-Forwarded-For is believed; the client is the right-most
   * address not listed. Empty = X-Forwarded-For is ignored.
   */
  trustedProxies: z.array(z.string().superRefine(checkProxyEntry)).default([]),
  /**
   * Removed: `true` trusted the left-most, client-chosen X-Forwarded-For entry. A config that
   * still says `true` stops startup (naming trustedProxies) rather than silently changing
   * whose address is limited; `false` meant what the default means now and is accepted.
   */
  trustProxy: z
    .literal(false, { error: 'removed: it trusted the client-controlled X-Forwarded-For; list your proxies in server.trustedProxies instead (e.g. ["10.0.0.0/8"])' })
    .optional(),
  maxHeaderBytes: z.number().int().min(1024).max(1024 * 1024).default(16 * 1024),
  maxUrlBytes: z.number().int().min(256).max(64 * 1024).default(8 * 1024),
  requestTimeoutMs: ms.default(30_000),
  headersTimeoutMs: ms.default(10_000),
  keepAliveTimeoutMs: ms.default(5_000),
  shutdownGraceMs: ms.default(10_000),
}).superRefine((s, ctx) => {
  // node:http refuses to start otherwise (a RangeError at startup, exit 1): said here, naming both options.
  if (s.headersTimeoutMs > s.requestTimeoutMs) {
    ctx.addIssue({ code: 'custom', path: ['headersTimeoutMs'], message: `must be at most server.requestTimeoutMs (${s.requestTimeoutMs}): the headers are part of the request` });
  }
});

const seconds = z.number().int().min(0);
const perEndpoint = (d: { profile: number; company: number; posts: number }) =>
  z
    .strictObject({
      profile: seconds.default(d.profile),
      company: seconds.default(d.company),
      profile_posts: seconds.default(d.posts),
      company_posts: seconds.default(d.posts),
    })
    .prefault({});

const CacheSchema = z.strictObject({
  /** Upper bound of cache.db content; least-recently-used entries are evicted beyond it. */
  maxBytes: z.number().int().min(1024 * 1024).default(1024 * 1024 * 1024),
  /** Seconds a stored answer serves `strategy=cached`. */
  ttl: perEndpoint({ profile: 7 * 86400, company: 7 * 86400, posts: 86400 }),
  /** Seconds a stored answer is kept for the besteffort stale fallback (and for strict/besteffort hits). */
  staleTtl: perEndpoint({ profile: 90 * 86400, company: 90 * 86400, posts: 30 * 86400 }),
  /** Seconds provider 404 and 513 answers are replayed (for every strategy but fetch). */
  negativeTtl: z
    .strictObject({ notFound: seconds.default(3600), sourceNotFound: seconds.default(86400) })
    .prefault({}),
  /** How often hit counters are flushed and eviction runs, off the request path. */
  maintenanceIntervalMs: ms.default(2_000),
  /** Retired: no effect (config.ts RETIRED_SETTINGS). Still read, and held to its old bounds, so that a file that sets it loads. */
  recencyGrainMs: nonNeg.max(86_400_000).optional(),
  /** Heap bytes for recently used entries the server also keeps in memory (2 bytes a character + 256 each); 0 disables it. */
  memoryMaxBytes: nonNeg.default(4 * 1024 * 1024),
});

/**
 * Shared storage for several replicas: both set, or neither (the embedded SQLite backend in
 * dataDir). Only the scheme and that the URL parses are checked here; a URL that does not
 * connect stops startup. One that does not parse (a port past 65535) would otherwise reach
 * `new URL` in a command, whose TypeError carries the whole URL, password included, to stderr.
 */
const parses = (what: string) => [(u: string) => URL.canParse(u), `must be a valid ${what} URL (host, port 0-65535, percent-encoded user and password)`] as const;
const StorageSchema = z
  .strictObject({
    /** PostgreSQL: keys, credits, reservations, the ledger and the shared response cache. */
    databaseUrl: z.string().regex(/^postgres(ql)?:\/\/\S+$/, 'must be a postgres:// or postgresql:// URL').refine(...parses('postgres://')).meta({ sensitive: 'url' }).nullable().default(null),
    /** Redis: rate-limit windows and the cross-replica coalescing of identical calls. */
    redisUrl: z.string().regex(/^rediss?:\/\/\S+$/, 'must be a redis:// or rediss:// URL').refine(...parses('redis://')).meta({ sensitive: 'url' }).nullable().default(null),
  })
  .superRefine((s, ctx) => {
    if (s.databaseUrl && !s.redisUrl) ctx.addIssue({ code: 'custom', path: ['redisUrl'], message: 'required when storage.databaseUrl is set (or set TOLLGATE_REDIS_URL)' });
    if (s.redisUrl && !s.databaseUrl) ctx.addIssue({ code: 'custom', path: ['databaseUrl'], message: 'required when storage.redisUrl is set (or set TOLLGATE_DATABASE_URL)' });
  });

export const ConfigSchema = z.strictObject({
  server: ServerSchema.prefault({}),
  dataDir: z.string().min(1).default('./data'),
  storage: StorageSchema.prefault({}),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Bearer token for /admin; admin routes are disabled while it is null. */
  adminToken: bearerSecret(),
  /**
   * Who changes made through /admin with the token are by, in the audit log. `cli` is the
   * command line's actor, so it cannot be the token's too.
   */
  adminTokenLabel: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1 to 64 characters of A-Z, a-z, 0-9, ".", "_" and "-"')
    .refine((v) => v !== CLI_ACTOR, { message: `"${CLI_ACTOR}" is the command line's actor in the audit log; choose another label` })
    .default(ADMIN_API_ACTOR),
  /** The dashboard at /dashboard (README "Dashboard"), enabled with adminToken. */
  dashboard: z
    .strictObject({
      /** How long a sign-in lasts (the session cookie's Max-Age and the stored session's expiry). */
      sessionTtlMs: z.number().int().min(60_000).max(30 * 86_400_000).default(12 * 3_600_000),
      /** The cookie's Secure flag: true always, false never, null when the request came over TLS (directly or, from a trusted proxy, X-Forwarded-Proto: https). */
      secureCookie: z.boolean().nullable().default(null),
    })
    .prefault({}),
  network: z
    .strictObject({
      /** The network's registrable domain; URLs on other hosts are INVALID_NETWORK_URL. */
      domain: z
        .string()
        .regex(/^[a-z0-9-]+(\.[a-z0-9-]+)+$/, 'must be a lowercase domain like example.com')
        .default(DEFAULT_NETWORK_DOMAIN),
    })
    .prefault({}),
  upstream: UpstreamSchema.prefault({}),
  ...LimitsSchemas,
  cache: CacheSchema.prefault({}),
  ledger: z
    .strictObject({
      /** Whole UTC days of raw ledger rows kept before today; older days keep only their daily totals. null = forever. */
      retentionDays: z.number().int().min(1).max(36_500).nullable().default(90),
      /** How often raw rows past the retention are deleted (the first pass one interval after start). */
      pruneIntervalMs: ms.default(3_600_000),
    })
    .prefault({}),
  notifications: NotificationsSchema,
  metrics: z
    .strictObject({
      /** Label credit and refusal series with key names; off for many keys or names that must not leave the host. */
      perKeyLabels: z.boolean().default(true),
      /** Bearer token GET /metrics requires; null leaves /metrics open (protect it at the network instead). */
      token: bearerSecret(),
    })
    .prefault({}),
});
