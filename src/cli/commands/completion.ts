import { Argument, Command } from 'commander';
import { completionScript, SHELLS, type Shell } from '../completion.ts';
import type { CliIO } from '../io.ts';

export function completionCommand(io: CliIO): Command {
  return new Command('completion')
    .description(
      'print a completion script for bash, zsh or fish: source <(edgectl completion bash), or edgectl completion fish | source',
    )
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(SHELLS))
    .action((shell: Shell, _o, command: Command) => {
      // the whole program's commands, whichever command this is under
      let root = command;
      while (root.parent) root = root.parent;
      io.out(completionScript(shell, root));
    });
}
