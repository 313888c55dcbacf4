import { Command } from 'commander';
import { addOperatorOptions, ConfigError, readConfig } from '../../operator/config.ts';
import { runOperator } from '../../operator/run.ts';
import { CliError, EXIT } from '../io.ts';

export function operatorCommand(): Command {
  return addOperatorOptions(
    new Command('operator').description(
      'Run the operator: reconcile edge.tunnel.dev custom resources into the Edge API',
    ),
  ).action(async (o) => {
    let stop: () => Promise<void>;
    try {
      ({ stop } = await runOperator(readConfig(o)));
    } catch (err) {
      // a setting that cannot work is one line and exit 2; anything else exit 1, still one line
      if (err instanceof ConfigError) throw new CliError(err.message, EXIT.usage);
      throw err;
    }
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
