import { failure, type Failure } from '../domain/errors.js';
import { bearerToken, keyRefusal, keyShaped, type ApiKey, type FoundKey } from '../domain/keys.js';

/** DESIGN §2 step 3: the key a request presents, or the 401 it earns. */
export function authenticate(header: string | undefined, keys: { findBySecret(secret: string): FoundKey | null }, now: number): ApiKey | Failure {
  const token = bearerToken(header);
  if (token === null) return failure('MISSING_API_KEY');
  const found = keyShaped(token) ? keys.findBySecret(token) : null;
  return keyRefusal(found?.key ?? null, now, found?.previous) ?? found!.key;
}
