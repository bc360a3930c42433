import type { EndpointDef, Strategy } from './endpoints.js';
import { failure, type Failure } from './errors.js';
import type { ApiKey } from './keys.js';

/** Pure scope decision (DESIGN §2 step 6): a null scope list means "all". */
export function accessRefusal(key: ApiKey, endpoint: EndpointDef, strategy: Strategy): Failure | null {
  if (key.endpoints && !key.endpoints.includes(endpoint.name)) {
    return failure('ACCESS_DENIED', `This API key does not have access to the '${endpoint.name}' endpoint.`);
  }
  if (key.strategies && !key.strategies.includes(strategy)) {
    return failure('ACCESS_DENIED', `This API key may not use strategy '${strategy}'.`);
  }
  return null;
}
