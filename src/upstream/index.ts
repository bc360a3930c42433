export { UpstreamClient, type UpstreamDeps } from './client.js';
export type { AdmittedCall } from './call-state.js';
export { classifyAnswer, parseRetryAfter } from './map.js';
export type {
  BreakerState,
  ProviderMeta,
  UpstreamCall,
  UpstreamFailure,
  UpstreamFailureKind,
  UpstreamObserver,
  UpstreamOutcome,
  UpstreamSettings,
  UpstreamSuccess,
} from './types.js';
