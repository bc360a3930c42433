/** Progress lines on stderr, so that stdout carries only the summary. */
const t0 = performance.now();
export function progress(msg: string): void {
  process.stderr.write(`[bench +${((performance.now() - t0) / 1000).toFixed(1)}s] ${msg}\n`);
}
