import { Command } from 'commander';
import { addOperatorOptions, readConfig } from '../../operator/config.ts';
import { runOperator } from '../../operator/run.ts';

export function operatorCommand(): Command {
  return addOperatorOptions(
    new Command('operator').description(
      'Run the operator: reconcile edge.tunnel.dev custom resources into the Edge API',
    ),
  ).action(async (o) => {
    const { stop } = await runOperator(readConfig(o));
    let stopping = false;
    const shutdown = (sig: string) => {
      if (stopping) return;
      stopping = true;
      process.stderr.write(`edge-operator: ${sig}, draining\n`);
      void stop().then(() => process.exit(0));
    };
    process.on('SIGINT', () => shutdown('SIGINT'));
    process.on('SIGTERM', () => shutdown('SIGTERM'));
  });
}
