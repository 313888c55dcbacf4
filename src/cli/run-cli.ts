// Builds edgectl and runs it; returns the exit code instead of exiting, so tests can run
// commands in-process.
import type { Command } from 'commander';
import { clusterCommand } from './commands/cluster.ts';
import { completionCommand } from './commands/completion.ts';
import { drainCommand } from './commands/drain.ts';
import { emulatorCommand } from './commands/emulator.ts';
import { exportCommand } from './commands/export.ts';
import { operatorCommand } from './commands/operator.ts';
import { planCommand } from './commands/plan.ts';
import { sessionsCommand } from './commands/sessions.ts';
import { traceCommand } from './commands/trace.ts';
import { tunnelsCommand } from './commands/tunnels.ts';
import { versionCommand } from './commands/version.ts';
import type { CliIO } from './io.ts';
import { program, runProgram } from './program.ts';

export function buildProgram(io: CliIO): Command {
  return program(io, [
    sessionsCommand(io),
    tunnelsCommand(io),
    exportCommand(io),
    drainCommand(io),
    traceCommand(io),
    planCommand(io),
    operatorCommand(),
    emulatorCommand(),
    clusterCommand(),
    versionCommand(io),
    completionCommand(io),
  ]);
}

export const runCli = (argv: string[], io: CliIO): Promise<number> => runProgram(buildProgram(io), argv, io);
