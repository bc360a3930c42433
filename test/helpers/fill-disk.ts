import { closeSync, openSync, writeSync } from 'node:fs';

/** Write `file` until its filesystem says ENOSPC (a small tmpfs the test mounted): a full disk, for real. */
export function fillDisk(file: string): void {
  const fd = openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
}
