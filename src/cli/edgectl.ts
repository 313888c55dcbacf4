#!/usr/bin/env node
import { processIO } from './io.ts';
import { runCli } from './run-cli.ts';

const code = await runCli(process.argv.slice(2), processIO());
// long-running commands (operator, emulator) keep the process alive on their own
if (code !== 0) process.exit(code);
