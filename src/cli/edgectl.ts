#!/usr/bin/env node
// edgectl's entry. The Node check comes before anything is loaded that an older Node fails on
// (undici throws at import on Node 20): its static imports stay free of dependencies, and the
// commands come after the check, by dynamic import.
import { processIO } from './io.ts';
import { nodeTooOld } from './node-check.ts';

const tooOld = nodeTooOld(process.versions.node);
if (tooOld) {
  process.stderr.write(`${tooOld}\n`);
  process.exit(1);
}
const argv = process.argv.slice(2);
// the operator runs for weeks: it loads its own command only (run-operator.ts)
const { runCli } = argv[0] === 'operator' ? await import('./run-operator.ts') : await import('./run-cli.ts');
const code = await runCli(argv, processIO());
// long-running commands (operator, emulator) keep the process alive on their own
if (code !== 0) process.exit(code);
