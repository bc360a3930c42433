import type { IncomingHttpHeaders } from 'node:http';
import { DecoratorHandler, type Dispatcher } from 'undici';
import { inContract, OpenApiContract } from './openapi-contract.js';

/**
 * An undici interceptor that observes answers to /v1, /admin and operations targets and
 * judges each against the OpenAPI document (openapi-contract.ts) as it completes, before the
 * caller sees its end. It changes nothing the caller sees: violations are only collected, and the setup
 * file (test/setup/openapi-contract.ts) fails the test that made the call with them.
 *
 * Installed on undici's global dispatcher, which `request()` and `fetch()` use; a test with a
 * dispatcher of its own composes it: `new Pool(url).compose(contractCheck)`.
 */

/** Violations not yet reported, in the order they were seen. */
export const violations: string[] = [];

let contract: OpenApiContract | null = null;

interface Observed {
  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void;
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void;
  onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void;
}
// Typed by undici without its methods; it forwards every callback (wrapping a legacy handler).
const Forwarding = DecoratorHandler as unknown as new (handler: Dispatcher.DispatchHandler) => Observed;

class Observer extends Forwarding {
  private status = 0;
  private headers: IncomingHttpHeaders = {};
  private readonly chunks: Buffer[] = [];

  constructor(
    private readonly method: string,
    private readonly target: string,
    handler: Dispatcher.DispatchHandler,
  ) {
    super(handler);
  }

  override onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    this.status = statusCode;
    this.headers = headers;
    return super.onResponseStart(controller, statusCode, headers, statusMessage);
  }

  override onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(Buffer.from(chunk));
    return super.onResponseData(controller, chunk);
  }

  override onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    contract ??= new OpenApiContract();
    const body = Buffer.concat(this.chunks).toString('utf8');
    violations.push(...contract.check({ method: this.method, target: this.target, status: this.status, headers: this.headers, body }));
    return super.onResponseEnd(controller, trailers);
  }
}

/**
 * Make ready, before a test whose timing matters, what judging these answers would compile on
 * first use (OpenApiContract.prepare): the check runs in the test's process, and so does a
 * gateway started with test/helpers/stack.ts.
 */
export function prepareContract(answers: ReadonlyArray<{ readonly method: string; readonly target: string; readonly status: number }>): void {
  contract ??= new OpenApiContract();
  for (const a of answers) contract.prepare(a.method, a.target, a.status);
}

export const contractCheck: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
  if (!inContract(opts.path)) return dispatch(opts, handler);
  return dispatch(opts, new Observer(opts.method, opts.path, handler));
};

/** The violations seen since the last call, and forget them. */
export function takeViolations(): string[] {
  return violations.splice(0, violations.length);
}
