import { Argument, type Command } from 'commander';
import { VERSION } from '../obs/version.js';
import { examples, jsonOption, printJson } from './common.js';
import { bashScript, commandTree } from './completion.js';
import { zshScript } from './completion-zsh.js';

/** Commands about the CLI itself: its version and its shell completion. */
export function registerMeta(program: Command): void {
  const version = program.command('version').description('print the version (as --version), with --json also the Node.js version');
  jsonOption(version, 'print {version, node} as JSON');
  examples(version, [['the version a script can compare', 'tollgate version --json']]).action((o: { json?: boolean }) => {
    if (o.json) printJson({ version: VERSION, node: process.version });
    else console.log(VERSION);
  });

  const completion = program
    .command('completion')
    .description('print a shell completion script for bash or zsh')
    .addArgument(new Argument('<shell>', 'the shell').choices(['bash', 'zsh']));
  examples(completion, [
    ['bash, for this user (bash-completion loads it on demand)', 'tollgate completion bash > ~/.local/share/bash-completion/completions/tollgate'],
    ['bash, without bash-completion', "echo 'source <(tollgate completion bash)' >> ~/.bashrc"],
    ['zsh: a file named _tollgate in a directory of $fpath', 'tollgate completion zsh > "${fpath[1]}/_tollgate"'],
  ]).action((shell: 'bash' | 'zsh') => {
    // Generated from the finished program, so every command registered before is in it.
    const tree = commandTree(program);
    process.stdout.write(shell === 'bash' ? bashScript(tree, VERSION) : zshScript(tree, VERSION));
  });
}
