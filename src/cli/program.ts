// What every edgectl program shares, whichever commands it carries: the name, version and
// output, exit codes instead of process exits (so tests run commands in-process), and one
// line per failure.
import { Command, CommanderError } from 'commander';
import { VERSION } from '../version.ts';
import { CliError, type CliIO, EXIT, printable } from './io.ts';

/** Commands whose exit codes give 2 another meaning (plan: changes), and what their usage errors exit with. */
const usageExits = new WeakMap<Command, number>();

/** A usage error of this command (a flag it does not know...) exits with `code` instead of 2. */
export function usageExit<C extends Command>(c: C, code: number): C {
  usageExits.set(c, code);
  return c;
}

export function program(io: CliIO, commands: Command[]): Command {
  const p = new Command('edgectl')
    .description(
      'Edge Operator: the operator, the API emulator, and agent sessions and tunnels at the terminal',
    )
    // the version alone, as scripts read it; `edgectl version` says more
    .version(VERSION)
    .configureOutput({ writeOut: io.out, writeErr: io.err });
  for (const c of commands) p.addCommand(c);
  const exitOverride = (c: Command) => {
    const code = usageExits.get(c);
    // commander has printed the error: the exit code is all that is left to say
    if (code === undefined) c.exitOverride();
    else
      c.exitOverride((e) => {
        throw e.exitCode === 0 ? e : new CliError('', code);
      });
    c.configureOutput({ writeOut: io.out, writeErr: io.err });
    for (const sub of c.commands) exitOverride(sub);
  };
  exitOverride(p);
  return p;
}

export async function runProgram(p: Command, argv: string[], io: CliIO): Promise<number> {
  try {
    await p.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here too
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof CliError) {
      if (err.message) io.err(`error: ${printable(err.message)}\n`);
      return err.code;
    }
    // whatever was thrown (a string, an object without a message) is still one line
    io.err(`error: ${printable((err as Error)?.message ?? String(err))}\n`);
    return EXIT.failed;
  }
}
