import { z } from 'zod';
import { parseBudgets } from './domain/credits.js';
import { parseRatePolicies } from './domain/rate-limit.js';

/*
 * The configuration's limits and what they apply to — `keys` (the defaults of new keys),
 * `limits`, `credits` and `passthrough` (config-schema.ts holds the rest).
 */

const nonNeg = z.number().int().min(0);

/** A policy string checked with the same parser the keys use, so a typo stops startup. */
const policyText = (parse: (s: string) => unknown) =>
  z.string().superRefine((v, ctx) => {
    try {
      parse(v);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  });

/** Sections spread into the configuration's top level, in this order (config-schema.ts). */
export const LimitsSchemas = {
  keys: z
    .strictObject({
      /** Copied into keys created without --rate / --credits. */
      defaults: z
        .strictObject({
          rate: policyText(parseRatePolicies).nullable().default(null),
          credits: policyText(parseBudgets).nullable().default(null),
        })
        .prefault({}),
    })
    .prefault({}),
  limits: z
    .strictObject({
      /** Failed authentications allowed per client IP; null disables the limit. */
      failedAuth: policyText(parseRatePolicies).nullable().default('30/minute'),
      /**
       * Shared backend only: what rate limits do while Redis cannot be reached. `open` counts in
       * this replica's memory instead (each replica enforces the limit on its own, so N replicas
       * admit up to N times it); `closed` refuses every limited request with STORAGE_UNAVAILABLE.
       * Credit budgets are PostgreSQL's and hold either way.
       */
      onStoreFailure: z.enum(['open', 'closed']).default('open'),
    })
    .prefault({}),
  credits: z
    .strictObject({
      /** Credits reserved before a provider call, per endpoint; settled to the provider's figure after. */
      estimates: z
        .strictObject({
          profile: nonNeg.default(3),
          company: nonNeg.default(3),
          profile_posts: nonNeg.default(2),
          company_posts: nonNeg.default(2),
          passthrough: nonNeg.default(1),
        })
        .prefault({}),
    })
    .prefault({}),
  passthrough: z
    .strictObject({
      /** /v1 paths proxied to the provider; a trailing * matches a prefix. Empty = none. */
      paths: z.array(z.string().regex(/^\/v1\/[A-Za-z0-9._~\/-]*\*?$/, 'must be a /v1/ path, optionally ending in *')).default([]),
    })
    .prefault({}),
};
