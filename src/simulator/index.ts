/**
 * A faithful stand-in for the provider (provider-api-spec.md) for the demo, tests and
 * benchmarks: deterministic synthetic data, the provider's own cache and credits, and every
 * fault on demand — in-process through this API, out of process through `/__sim/`.
 */
import { SimServer } from './server.js';
import type { Simulator, SimulatorOptions } from './types.js';

export type { Fault, FaultRule, SimCall, SimStats, Simulator, SimulatorOptions } from './types.js';
export { DEFAULT_API_KEY, DEFAULT_CREDITS } from './types.js';
export { CREDITS_PATH } from './handler.js';
export { INITIAL_CREDIT_BALANCE } from './server.js';

export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const sim = new SimServer(opts);
  await sim.listen();
  return sim;
}
