/** A health probe that takes longer than this reports the store as unreachable. */
const PROBE_TIMEOUT_MS = 2_000;

/** 'ok', or what went wrong, within PROBE_TIMEOUT_MS. */
export async function probe(p: Promise<void>): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`unreachable: no answer within ${PROBE_TIMEOUT_MS} ms`), PROBE_TIMEOUT_MS);
  });
  try {
    return await Promise.race([p.then(() => 'ok'), timeout]);
  } catch (err) {
    return `unreachable: ${(err as Error).message}`;
  } finally {
    clearTimeout(timer);
  }
}
