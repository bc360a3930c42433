/**
 * Benchmark 9's event-loop stall figures (issue 16, item 1): the gateway's longest stall per
 * scenario against the idle gateway's, with what the same probe read over the same spans in a
 * bystander process (the machine's share) and in each anchor's own loop under the same load
 * (bench/baseline-server.ts loopProbe): a stall an anchor shows too is the load's and the
 * machine's, not Tollgate's work.
 */
import type { Figure } from './report.js';
import { stallProbe, type StallProbe } from './stall.js';
import { fmt } from './stats.js';

export const STALL_ALLOWANCE_MS = 20;

/** An anchor's own loop over a scenario's runs, by name. */
export interface AnchorStall {
  readonly name: string;
  readonly probe: StallProbe;
}

export function stallFigure(idleMs: number, scenario: string, ms: number, bystanderMs: number, anchors: readonly AnchorStall[] = []): Figure {
  const own = anchors.map((a) => `; ${a.name}'s own ${fmt.ms(a.probe.worst)}`).join('');
  return {
    figure: `Event-loop stall max (gateway): ${scenario}`,
    measured: fmt.ms(ms),
    baseline: `${fmt.ms(idleMs)} idle; bystander ${fmt.ms(bystanderMs)}${own}`,
    ratio: null,
    target: `≤ idle + ${STALL_ALLOWANCE_MS} ms`,
    pass: ms <= idleMs + STALL_ALLOWANCE_MS,
  };
}

/** A probe of an anchor's own loop (no bystander: the gateway's probe over the same spans reads it). */
export function anchorStall(name: string, probeUrl: string | undefined): AnchorStall {
  if (!probeUrl) throw new Error(`${name} has no loop probe`);
  return { name, probe: stallProbe(probeUrl, {}, false) };
}
