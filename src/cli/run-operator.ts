// `edgectl operator` alone: the program with the operator's command only, so the operator's
// process never loads the other commands' code (tables, trace trees, the emulator's and the
// local control plane's options); what a module loads stays resident for the process's life.

import { operatorCommand } from './commands/operator.ts';
import type { CliIO } from './io.ts';
import { program, runProgram } from './program.ts';

export const runCli = (argv: string[], io: CliIO): Promise<number> =>
  runProgram(program(io, [operatorCommand()]), argv, io);
