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
    let stop: (() => Promise<void>) | undefined;
    let stopping = false;
    // installed before the start-up reads, which wait out an API server out of reach: in a
    // container Node is PID 1, and a signal without a handler would be ignored until the kill
    const shutdown = (sig: string) => {
      if (stopping) {
        process.stderr.write(`edge-operator: ${sig} again, exiting without draining\n`);
        process.exit(1);
      }
      stopping = true;
      if (!stop) {
        process.stderr.write(`edge-operator: ${sig} while starting, exiting\n`);
        process.exit(0);
      }
      process.stderr.write(`edge-operator: ${sig}, draining\n`);
      void stop().then(() => process.exit(0));
    };
    process.on('SIGINT', () => shutdown('SIGINT'));
    process.on('SIGTERM', () => shutdown('SIGTERM'));
    try {
      ({ stop } = await runOperator(readConfig(o)));
    } catch (err) {
      // a setting that cannot work is one line and exit 2; anything else exit 1, still one line
      if (err instanceof ConfigError) throw new CliError(err.message, EXIT.usage);
      throw err;
    }
  });
}
