#!/usr/bin/env node
import { processIO } from './io.ts';

const argv = process.argv.slice(2);
// the operator runs for weeks: it loads its own command only (run-operator.ts)
const { runCli } = argv[0] === 'operator' ? await import('./run-operator.ts') : await import('./run-cli.ts');
const code = await runCli(argv, processIO());
// long-running commands (operator, emulator) keep the process alive on their own
if (code !== 0) process.exit(code);
