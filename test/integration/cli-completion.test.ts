/**
 * `tollgate completion bash|zsh`: the scripts the real CLI prints, run by the real shells.
 * Bash completes through its own `complete -F` function with COMP_WORDS as readline would set
 * them; zsh completes in an interactive zsh on a pseudo-terminal, as a user presses Tab.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-completion-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const BASH = join(dir, 'tollgate.bash');
const ZSH_DIR = join(dir, 'zsh');
const ZSH = join(ZSH_DIR, '_tollgate');

beforeAll(async () => {
  for (const [shell, file] of [['bash', BASH], ['zsh', ZSH]] as const) {
    const r = await runCli(['completion', shell]);
    expect(r.code, r.stderr).toBe(0);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, r.stdout);
  }
  // Subdirectories the completion of a directory name finds.
  mkdirSync(join(dir, 'data-a'));
  mkdirSync(join(dir, 'data-b'));
});

function shell(cmd: 'bash' | 'zsh', script: string): string {
  const r = spawnSync(cmd, cmd === 'zsh' ? ['-f', '-c', script] : ['--norc', '--noprofile', '-c', script], { cwd: dir, encoding: 'utf8' });
  if (r.error) throw new Error(`${cmd} is needed for this test (.ci/run installs it): ${r.error.message}`);
  expect(r.stderr, script).toBe('');
  expect(r.status).toBe(0);
  return r.stdout;
}

/** What bash offers for the command line `words` (the last one being completed). */
function bash(...words: string[]): string[] {
  const line = words.map((w) => `'${w}'`).join(' ');
  const out = shell('bash', `source ${BASH}; COMP_WORDS=(${line}); COMP_CWORD=${words.length - 1}; _tollgate; printf '%s\\n' "\${COMPREPLY[@]}"`);
  return out.split('\n').filter(Boolean);
}

describe('tollgate completion bash', () => {
  it('registers _tollgate for the tollgate command', () => {
    expect(shell('bash', `source ${BASH}; complete -p tollgate`)).toBe('complete -F _tollgate tollgate\n');
  });

  it.each<[string[], string[]]>([
    [['tollgate', 'ke'], ['keys']],
    [['tollgate', 'mig'], ['migrate', 'migrate-data']],
    [['tollgate', 'keys', 'r'], ['rotate', 'revoke']],
    [['tollgate', 'keys', 'create', '--na'], ['--name']],
    [['tollgate', 'cache', 'purge', '--endpoint', 'profile'], ['profile', 'profile_posts']],
    [['tollgate', 'usage', '--by', ''], ['key', 'team', 'day', 'endpoint']],
    [['tollgate', '--log-level', 'd'], ['debug']],
    // A global option and its value before the command: still completes the command's words.
    [['tollgate', '--data-dir', '/tmp', 'keys', 'list', '--j'], ['--json']],
    [['tollgate', 'keys', 'create', '--name', 'cr'], []],
    [['tollgate', 'completion', ''], ['bash', 'zsh']],
    [['tollgate', 'help', 'ca'], ['cache']],
  ])('%j → %j', (words, expected) => {
    expect(bash(...words)).toEqual(expected);
  });

  it('completes directory names after --data-dir and file names after --config', () => {
    writeFileSync(join(dir, 'data-config.yaml'), '');
    expect(bash('tollgate', '--data-dir', 'data-').sort()).toEqual(['data-a', 'data-b']);
    expect(bash('tollgate', 'keys', 'list', '--config', 'data-').sort()).toEqual(['data-a', 'data-b', 'data-config.yaml']);
  });

  it('offers every command of `tollgate --help`: the script is generated from the same program', async () => {
    const help = (await runCli(['--help'])).stdout;
    const listed = [...help.split('\nCommands:\n')[1]!.matchAll(/^ {2}([a-z-]+)/gm)].map((m) => m[1]);
    expect(bash('tollgate', '')).toEqual(listed);
  });
});

/**
 * What a real interactive zsh puts on the command line for each of `lines` after Tab: zsh in a
 * pseudo-terminal (zsh/zpty) with compinit and the script in $fpath, as a user installs it; a
 * key bound to a widget writes the edited line to a file, and clears it for the next one.
 */
function zshTab(lines: readonly string[]): string[] {
  const out = join(dir, 'zsh-line');
  const setup = `PS1=''; fpath=(${ZSH_DIR} $fpath); autoload -Uz compinit; compinit -u -d ${join(dir, 'zcompdump')}; tollgate() { :; }; dump() { print -r -- "$BUFFER" > ${out}; BUFFER=''; }; zle -N dump; bindkey '^X' dump`;
  const script = `zmodload zsh/zpty
zpty z 'zsh -f -i'
zpty -w z ${JSON.stringify(setup).replace(/\$/g, '\\$')}
for line in ${lines.map((l) => `'${l}'`).join(' ')}; do
  rm -f ${out}
  zpty -n -w z "$line"$'\\t\\x18'
  repeat 100 { [[ -s ${out} ]] && break; sleep 0.1 }
  print -r -- "$(<${out})"
done
zpty -d z`;
  return shell('zsh', script).split('\n').slice(0, lines.length);
}

describe('tollgate completion zsh', () => {
  it('parses (zsh -n)', () => {
    expect(shell('zsh', `zsh -n ${ZSH} && print ok`)).toBe('ok\n');
  });

  it('is found by compinit in $fpath as _tollgate, and registers itself when sourced after compinit', () => {
    const dump = join(dir, 'zcompdump-check');
    expect(shell('zsh', `fpath=(${ZSH_DIR} $fpath); autoload -Uz compinit; compinit -u -d ${dump}; print -r -- $_comps[tollgate]`)).toBe('_tollgate\n');
    expect(shell('zsh', `autoload -Uz compinit; compinit -u -d ${dump}; source ${ZSH}; print -r -- $_comps[tollgate]`)).toBe('_tollgate\n');
  });

  it('completes commands, options, choices and directories in an interactive zsh', () => {
    const lines = ['tollgate ke', 'tollgate keys cr', 'tollgate keys create --js', 'tollgate --data-dir da', 'tollgate --data-dir data-a usage --by e', 'tollgate completion z'];
    expect(zshTab(lines)).toEqual([
      'tollgate keys ',
      'tollgate keys create ',
      'tollgate keys create --json ',
      'tollgate --data-dir data-',
      'tollgate --data-dir data-a usage --by endpoint ',
      'tollgate completion zsh ',
    ]);
  }, 30_000);
});
