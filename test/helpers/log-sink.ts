/**
 * A log destination that keeps each line apart, however many lines one write carries: the
 * gateway writes a turn's request lines as one chunk (src/obs/request-log.ts RequestLines),
 * as any reader of its output stream sees them.
 */
export function lineSink(lines: string[]): { write(chunk: string): void } {
  return {
    write(chunk) {
      for (const line of chunk.split('\n')) if (line) lines.push(line + '\n');
    },
  };
}
