/** Types of trace-probe.mjs (a plain .mjs, so that `node --import` loads it without tsx). */
export interface TraceProbe {
  /** What the probe holds (a ProbeDump, lib/tail-attribution.ts), and start afresh. */
  take(): unknown;
  /** take(), written to <dir>/<pid>-<n>.json. */
  dump(dir: string): void;
}
export function startTraceProbe(withRequests?: boolean): TraceProbe;
