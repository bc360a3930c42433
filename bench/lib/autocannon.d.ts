// The subset of autocannon's API the benchmarks use (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  interface RawRequest {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
  }
  interface Options {
    url: string;
    connections?: number;
    pipelining?: number;
    duration?: number;
    amount?: number;
    /** Requests per second over all connections (a steady load rather than a saturating one). */
    overallRate?: number;
    timeout?: number;
    headers?: Record<string, string>;
    setupClient?: (client: Client) => void;
    requests?: Array<RawRequest & { setupRequest?: (req: RawRequest, context: object) => RawRequest }>;
  }
  interface Client {
    setRequests(requests: RawRequest[]): void;
  }
  interface Histogram {
    average: number;
    mean: number;
    p50: number;
    p99: number;
    total: number;
  }
  interface Result {
    requests: Histogram;
    latency: Histogram;
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    '2xx': number;
  }
  interface Instance extends EventEmitter, PromiseLike<Result> {
    stop(): void;
  }
  function autocannon(opts: Options): Instance;
  export default autocannon;
}
