#!/usr/bin/env node
import { Command } from 'commander';
import { USER_AGENT } from '../api/transport.ts';
import { clusterCommand } from './commands/cluster.ts';
import { emulatorCommand } from './commands/emulator.ts';
import { operatorCommand } from './commands/operator.ts';

const program = new Command('edgectl')
  .description(
    'Edge Operator: the operator, the API emulator, and agent sessions and tunnels at the terminal',
  )
  .version(USER_AGENT)
  .showHelpAfterError()
  .addCommand(emulatorCommand())
  .addCommand(clusterCommand())
  .addCommand(operatorCommand());

await program.parseAsync(process.argv);
