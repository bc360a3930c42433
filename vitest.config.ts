import { availableParallelism } from 'node:os';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/**
 * Small files that run long (most of their time spent waiting: replica processes riding out
 * outages, a fresh PostgreSQL database per contract test, a CLI process per case).
 */
const LONG_RUNNING = [/^test\/contract\/contract\.test\.ts$/, /^test\/integration\/replicas?-/, /^test\/integration\/cli-conventions\.test\.ts$/];

/**
 * Long-running files first. Without durations from an earlier run (a fresh checkout, as in CI)
 * vitest starts the larger files first, and these are among the smallest: the contract suite
 * then started near the end and ran on one worker, the other idle, for over a minute.
 */
class LongRunningFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const long = (f: TestSpecification) => LONG_RUNNING.some((re) => re.test(relative(f.project.config.root, f.moduleId).replaceAll('\\', '/')));
    return [...sorted.filter(long), ...sorted.filter((f) => !long(f))];
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    // Integration tests start real servers on port 0; forks isolate native sqlite handles.
    pool: 'forks',
    // vitest's default is one worker less than the cores: one file at a time on two cores, though
    // most files spend most of their time waiting (replica processes, PostgreSQL, timers). Two
    // files at once there took a sample of ten slow files from 162 s to 119 s.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    sequence: { sequencer: LongRunningFirst },
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Every /v1 and /admin answer the tests receive is checked against the OpenAPI document.
    setupFiles: ['test/setup/openapi-contract.ts'],
  },
});
