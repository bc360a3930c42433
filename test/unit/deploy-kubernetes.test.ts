import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { kustomize } from '../helpers/kubectl.js';

/*
 * deploy/kubernetes as `kubectl apply -k` would send it, rendered by `kubectl kustomize` (no
 * cluster on the test machines): the properties README "Deploy" promises for a replicated
 * installation — several replicas on the shared backend, probes on the right paths and port,
 * a drain that fits in the grace period, hardening, disruption budget and Service selecting the
 * Deployment's pods, and secrets only in the (example, placeholder) Secret.
 */

const ROOT = join(import.meta.dirname, '../..');
const DIR = join(ROOT, 'deploy/kubernetes');
const readDir = (p: string) => readFileSync(join(DIR, p), 'utf8');

type Obj = Record<string, any>;
const kustomization = parse(readDir('kustomization.yaml')) as Obj;
const objects: Obj[] = parseAllDocuments(kustomize(DIR)).map((d) => d.toJS() as Obj);
const only = (kind: string) => {
  const found = objects.filter((o) => o.kind === kind);
  if (found.length !== 1) throw new Error(`kustomization.yaml: ${found.length} ${kind} objects, expected 1`);
  return found[0]!;
};
const deployment = only('Deployment');
const service = only('Service');
const pdb = only('PodDisruptionBudget');
const pod = deployment.spec.template.spec as Obj;
const container = (pod.containers as Obj[])[0]!;
const podLabels = deployment.spec.template.metadata.labels as Record<string, string>;
const secret = parse(readDir('secret.example.yaml')) as Obj;
const job = parse(readDir('migrate-job.yaml')) as Obj;
const generated = (kustomization.configMapGenerator as Obj[])[0]!;
const configFile = join(DIR, (generated.files as string[])[0]!);
const configMap = only('ConfigMap');

/** The configuration a pod starts with: the mounted file, the Secret's keys, the container's env. */
function podConfig() {
  const env: Record<string, string> = { ...(secret.stringData as Record<string, string>) };
  for (const e of container.env as Obj[]) if (e.value !== undefined) env[e.name] = e.value;
  const mount = (container.volumeMounts as Obj[]).find((m) => env.TOLLGATE_CONFIG!.startsWith(`${m.mountPath}/`))!;
  const volume = (pod.volumes as Obj[]).find((v) => v.name === mount.name)!;
  // The generated ConfigMap, under its content-hashed name, holds the file as it is in the repository.
  expect(volume.configMap.name).toBe(configMap.metadata.name);
  expect(configMap.metadata.name).toMatch(new RegExp(`^${generated.name}-[a-z0-9]{10}$`));
  expect(configMap.data[(generated.files as string[])[0]!]).toBe(readFileSync(configFile, 'utf8'));
  expect(env.TOLLGATE_CONFIG).toBe(`${mount.mountPath}/${(generated.files as string[])[0]}`);
  return loadConfig({ env, file: configFile });
}

const selects = (selector: Record<string, string>) => Object.entries(selector).every(([k, v]) => podLabels[k] === v);

describe('Kubernetes manifests (deploy/kubernetes)', () => {
  it('kustomization: the manifests and the generated config, but never the example Secret', () => {
    expect(objects.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'PodDisruptionBudget', 'Service']);
    expect(kustomization.resources).not.toContain('secret.example.yaml');
    expect(objects.some((o) => o.kind === 'Secret')).toBe(false);
    // The image set in kustomization.yaml replaces the manifest's `tollgate`.
    const image = (kustomization.images as Obj[])[0]!;
    expect(parse(readDir('deployment.yaml')).spec.template.spec.containers[0].image).toBe(image.name);
    expect(container.image).toBe(`${image.newName}:${image.newTag}`);
    for (const o of objects) expect(o.metadata.labels, `${o.kind} ${o.metadata.name}`).toMatchObject({ 'app.kubernetes.io/part-of': 'tollgate' });
  });

  it('runs several replicas, rolled one at a time without losing capacity', () => {
    expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
    expect(deployment.spec.strategy.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
    expect(selects(deployment.spec.selector.matchLabels)).toBe(true);
  });

  it('every pod is on the shared backend, with a valid configuration', () => {
    const config = podConfig();
    expect(config.storage.databaseUrl).toMatch(/^postgres:\/\//);
    expect(config.storage.redisUrl).toMatch(/^rediss?:\/\//);
    expect(config.upstream.url).toBeTruthy();
    expect(config.upstream.apiKey).toBeTruthy();
    expect(container.args).toEqual(['serve']);
  });

  it('probes readiness on /readyz and liveness on /healthz, on the port the server listens on', () => {
    const port = (container.ports as Obj[]).find((p) => p.name === 'http')!;
    expect(port.containerPort).toBe(podConfig().server.port);
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(container.startupProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    // Out of rotation within seconds, but a single slow answer does not restart the pod.
    expect(container.readinessProbe.periodSeconds * container.readinessProbe.failureThreshold).toBeLessThanOrEqual(10);
    expect(container.livenessProbe.failureThreshold).toBeGreaterThanOrEqual(3);
    expect(deployment.spec.template.metadata.annotations['prometheus.io/port']).toBe(String(port.containerPort));
    expect(service.spec.ports).toEqual([expect.objectContaining({ port: port.containerPort, targetPort: 'http' })]);
  });

  it('a terminating pod leaves the endpoints, then drains, all within its grace period', () => {
    const sleep = container.lifecycle.preStop.exec.command as string[];
    expect(sleep[0]).toBe('sleep');
    const preStopMs = Number(sleep[1]) * 1000;
    expect(preStopMs).toBeGreaterThanOrEqual(3_000);
    // The server exits by itself at most 5 s after server.shutdownGraceMs (README "Shutdown").
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(preStopMs + podConfig().server.shutdownGraceMs + 5_000);
  });

  it('is hardened: the image\'s non-root user, read-only root, no capabilities, no service links', () => {
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } });
    expect(container.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    });
    // With the root read-only, /tmp is an emptyDir (Node and libraries may write there).
    const tmp = (container.volumeMounts as Obj[]).find((m) => m.mountPath === '/tmp')!;
    expect((pod.volumes as Obj[]).find((v) => v.name === tmp.name)?.emptyDir).toBeDefined();
    // A Service named tollgate would inject TOLLGATE_PORT=tcp://…, which startup refuses.
    expect(pod.enableServiceLinks).toBe(false);
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(container.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(container.resources.limits.memory).toBeTruthy();
  });

  it('the Service, the disruption budget and the spread constraints all select the Deployment\'s pods', () => {
    expect(selects(service.spec.selector)).toBe(true);
    expect(selects(pdb.spec.selector.matchLabels)).toBe(true);
    // A budget that allows no disruption would block every node drain.
    if (pdb.spec.maxUnavailable !== undefined) expect(pdb.spec.maxUnavailable).toBeGreaterThanOrEqual(1);
    else expect(pdb.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
    const spread = pod.topologySpreadConstraints as Obj[];
    expect(spread.map((c) => c.topologyKey).sort()).toEqual(['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
    for (const c of spread) expect(selects(c.labelSelector.matchLabels)).toBe(true);
  });

  it('secrets live only in the Secret the pods take whole, and its example holds placeholders', () => {
    expect(container.envFrom).toEqual([{ secretRef: { name: secret.metadata.name } }]);
    expect(secret.kind).toBe('Secret');
    const data = secret.stringData as Record<string, string>;
    expect(Object.keys(data).sort()).toEqual(['TOLLGATE_ADMIN_TOKEN', 'TOLLGATE_DATABASE_URL', 'TOLLGATE_REDIS_URL', 'TOLLGATE_UPSTREAM_API_KEY']);
    for (const [k, v] of Object.entries(data)) expect(v, k).toContain('CHANGE_ME');
    for (const url of [data.TOLLGATE_DATABASE_URL!, data.TOLLGATE_REDIS_URL!]) expect(new URL(url).hostname).toMatch(/\.example\.internal$/);
    // No secret in plain env or in the ConfigMap's file.
    for (const e of container.env as Obj[]) expect(e.name).not.toMatch(/KEY|TOKEN|PASSWORD|DATABASE_URL|REDIS_URL/);
    const file = parse(readFileSync(configFile, 'utf8')) as Obj;
    expect(file.adminToken ?? file.upstream?.apiKey ?? file.storage ?? file.metrics?.token).toBeUndefined();
  });

  it('the optional migration Job runs `migrate` with the same image and Secret, as hardened', () => {
    const spec = job.spec.template.spec as Obj;
    const c = (spec.containers as Obj[])[0]!;
    expect(c.args).toEqual(['migrate']);
    const image = (kustomization.images as Obj[])[0]!;
    expect(c.image).toBe(`${image.newName}:${image.newTag}`);
    expect(c.envFrom).toEqual(container.envFrom);
    expect(c.securityContext).toEqual(container.securityContext);
    expect(spec.restartPolicy).toBe('Never');
    expect(spec.enableServiceLinks).toBe(false);
    expect(job.metadata.generateName).toBeTruthy();
  });
});
