import { failure, type Failure } from '../domain/errors.js';
import { bearerToken, keyRefusal, keyShaped, type ApiKey, type FoundKey } from '../domain/keys.js';
import { isPromise, type Keys, type MaybePromise } from '../store/ports.js';

/**
 * DESIGN §2 step 3: the key a request presents, or the 401 it earns. A missing or malformed
 * token is answered without a store lookup; a value when the store answers with values.
 */
export function authenticate(header: string | undefined, keys: Pick<Keys, 'findBySecret'>, now: number): MaybePromise<ApiKey | Failure> {
  const token = bearerToken(header);
  if (token === null) return failure('MISSING_API_KEY');
  if (!keyShaped(token)) return keyRefusal(null, now)!;
  const found = keys.findBySecret(token);
  return isPromise(found) ? found.then((f) => checked(f, now)) : checked(found, now);
}

function checked(found: FoundKey | null, now: number): ApiKey | Failure {
  return keyRefusal(found?.key ?? null, now, found?.previous) ?? found!.key;
}
