import { failure, type Failure } from '../domain/errors.js';
import { bearerToken, keyRefusal, keyShaped, type ApiKey, type FoundKey } from '../domain/keys.js';
import { isPromise, type Keys, type MaybePromise } from '../store/ports.js';

/** A presented key refused: the 401, and the id of the key the secret belongs to (revoked, expired), for the log line only. */
export interface Refused {
  readonly refusal: Failure;
  readonly keyId: string | null;
}

/**
 * DESIGN §2 step 3: the key a request presents, or the 401 it earns. A missing or malformed
 * token is answered without a store lookup; a value when the store answers with values.
 */
export function authenticate(header: string | undefined, keys: Pick<Keys, 'findBySecret'>, now: number): MaybePromise<ApiKey | Refused> {
  const token = bearerToken(header);
  if (token === null) return { refusal: failure('MISSING_API_KEY'), keyId: null };
  if (!keyShaped(token)) return { refusal: keyRefusal(null, now)!, keyId: null };
  const found = keys.findBySecret(token);
  return isPromise(found) ? found.then((f) => checked(f, now)) : checked(found, now);
}

function checked(found: FoundKey | null, now: number): ApiKey | Refused {
  const refusal = keyRefusal(found?.key ?? null, now, found?.previous);
  return refusal ? { refusal, keyId: found?.key.id ?? null } : found!.key;
}
