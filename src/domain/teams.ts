import { hasLoneSurrogate } from './typed-input.js';
import type { Budget } from './credits.js';

/*
 * Teams (README "Teams"): a key belongs to at most one team, named by the key's `team` field
 * (the `owner` field it replaced; a key without one has no team). A team may have a credit
 * budget shared by all its keys, enforced like a key's: reserved before the provider call,
 * charged with the ledger row, its refusal a 429 naming the team budget.
 */

export interface Team {
  readonly name: string;
  /** `5000/month`, `50/day,1000/month`; null: no team budget. */
  readonly credits: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** The credit scope of a team's budget: beside key ids (`key_…`) and the provider (`*provider`). */
export function teamScope(name: string): string {
  return TEAM_SCOPE_PREFIX + name;
}

export const TEAM_SCOPE_PREFIX = 'team:';

export function isTeamScope(scope: string): boolean {
  return scope.startsWith(TEAM_SCOPE_PREFIX);
}

export class InvalidTeamName extends Error {
  override name = 'InvalidTeamName';
}

/**
 * A team name as given, trimmed and in Unicode NFC. Owners of keys made before teams existed
 * were free text (the demo's is "tollgate demo"), and they became teams as they were, so names
 * stay free text: 1 to 100 characters, none of them a control character. NFC because a key
 * naming a team makes it exist: "Cafe" + combining acute (as some terminals and forms send
 * it) named a second team, without the budget of "Café", and the key escaped it.
 */
export function teamName(input: string): string {
  const trimmed = input.trim();
  // eslint-disable-next-line no-control-regex
  if (trimmed.length === 0 || /[\u0000-\u001f\u007f]/.test(trimmed) || hasLoneSurrogate(trimmed)) {
    throw new InvalidTeamName('must be 1 to 100 characters of valid Unicode, without control characters');
  }
  const name = trimmed.normalize('NFC');
  if (name.length > 100) throw new InvalidTeamName('must be 1 to 100 characters of valid Unicode, without control characters');
  return name;
}

/**
 * A name a team is created or changed under: teamName, and not "none" (see below), "." or "..". Those are dot
 * segments in a URL path — browsers and HTTP clients resolve /dashboard/teams/.. to
 * /dashboard/ (percent-encoded too) — so such a team's page and /admin/teams/<name> could not
 * be reached. Looking a name up stays teamName's: a team of that name from a key owner made
 * before teams existed can still be shown, emptied and deleted from the CLI.
 */
export function newTeamName(input: string): string {
  const name = teamName(input);
  if (name === '.' || name === '..') throw new InvalidTeamName('cannot be "." or "..": the team\'s address (/admin/teams/<name>, /dashboard/teams/<name>) could not be reached');
  // A key's team given as "none" (any case) takes the key out of any team: a team of that name
  // could be made, and have a budget, but no key could join it, and one sent to it had no team.
  if (name.toLowerCase() === 'none') throw new InvalidTeamName('cannot be "none" (in any case): as a key\'s team it means no team, so no key could join it');
  return name;
}

/** A team budget with its use in one period, as `teams show` and the admin API report it. */
export interface TeamBudgetView {
  readonly budget: Budget;
  readonly used: number;
  readonly reserved: number;
  readonly remaining: number;
  readonly resetsInSeconds: number;
}

/**
 * What deleting a team does with the keys it still has (README "Teams"): `refuse` to delete
 * it while it has any (revoked ones too: a key naming a team makes it exist), or move them all
 * to team `to` (null: no team) in the deletion's transaction.
 */
export type TeamKeysOnDelete = 'refuse' | { readonly to: string | null };

export type TeamDeletion =
  | { readonly deleted: true; readonly team: Team; readonly keys: readonly string[] }
  | { readonly deleted: false; readonly reason: 'not_found' }
  /** The team still has `keys` keys and the deletion was to refuse. */
  | { readonly deleted: false; readonly reason: 'has_keys'; readonly keys: number }
  /** The team the keys were to move to does not exist. */
  | { readonly deleted: false; readonly reason: 'no_target' };
