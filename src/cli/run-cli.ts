// Builds edgectl and runs it; returns the exit code instead of exiting, so tests can run
// commands in-process.
import { Command, CommanderError } from 'commander';
import { USER_AGENT } from '../api/transport.ts';
import { clusterCommand } from './commands/cluster.ts';
import { drainCommand } from './commands/drain.ts';
import { emulatorCommand } from './commands/emulator.ts';
import { exportCommand } from './commands/export.ts';
import { operatorCommand } from './commands/operator.ts';
import { sessionsCommand } from './commands/sessions.ts';
import { traceCommand } from './commands/trace.ts';
import { tunnelsCommand } from './commands/tunnels.ts';
import { CliError, type CliIO, EXIT } from './io.ts';

export function buildProgram(io: CliIO): Command {
  const program = new Command('edgectl')
    .description(
      'Edge Operator: the operator, the API emulator, and agent sessions and tunnels at the terminal',
    )
    .version(USER_AGENT)
    .showHelpAfterError()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .addCommand(sessionsCommand(io))
    .addCommand(tunnelsCommand(io))
    .addCommand(exportCommand(io))
    .addCommand(drainCommand(io))
    .addCommand(traceCommand(io))
    .addCommand(operatorCommand())
    .addCommand(emulatorCommand())
    .addCommand(clusterCommand());
  const exitOverride = (c: Command) => {
    c.exitOverride();
    c.configureOutput({ writeOut: io.out, writeErr: io.err });
    for (const sub of c.commands) exitOverride(sub);
  };
  exitOverride(program);
  return program;
}

export async function runCli(argv: string[], io: CliIO): Promise<number> {
  try {
    await buildProgram(io).parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here too
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof CliError) {
      if (err.message) io.err(`error: ${err.message}\n`);
      return err.code;
    }
    io.err(`error: ${(err as Error).message}\n`);
    return EXIT.failed;
  }
}
