import { spawnSync } from 'node:child_process';

/**
 * `kubectl kustomize DIR`: the manifests exactly as `kubectl apply -k DIR` would send them
 * (generated ConfigMaps with their hashed names and the references to them, image and label
 * transformers applied). kubectl is a test dependency like promtool: this machine kind ships
 * one, and `.ci/run` installs one where it is missing. A missing kubectl fails the test with
 * that instruction instead of skipping it, so a green run always means the render was checked.
 */
export function kustomize(dir: string): string {
  const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 30_000 });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') {
    throw new Error('kubectl not found on PATH: install kubectl ≥ 1.27 (.ci/run does this in CI when the machine has none).');
  }
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`kubectl kustomize ${dir} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}
