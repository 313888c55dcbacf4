import { Command, Option } from 'commander';
import { CliError, type CliIO, EXIT } from '../io.ts';

export function drainCommand(io: CliIO): Command {
  return new Command('drain')
    .description(
      "take an installation's edge.tunnel.dev objects out of its hands before uninstalling: Orphan (keep objects and remote resources, drop the finalizers; run with the operator stopped), Retain (delete the objects, keep the remote resources), Delete (delete both; the operator must run)",
    )
    .addOption(new Option('--policy <policy>', 'Orphan, Retain or Delete').makeOptionMandatory())
    .addOption(
      new Option('--kubeconfig <path>', 'kubeconfig (default: KUBECONFIG, ~/.kube/config, in-cluster)'),
    )
    .addOption(
      new Option('--namespaces <list>', 'comma-separated namespaces (default: all)').env('WATCH_NAMESPACES'),
    )
    .addOption(
      new Option('--instance <name>', "the installation's instance label value").env('EDGE_INSTANCE'),
    )
    .addOption(
      new Option('--timeout <seconds>', 'with Delete: how long to wait for the operator').default('300'),
    )
    .action(async (o) => {
      const { DRAIN_POLICIES, drain } = await import('../../operator/drain.ts');
      if (!(DRAIN_POLICIES as readonly string[]).includes(o.policy))
        throw new CliError(`--policy: "${o.policy}" is not one of ${DRAIN_POLICIES.join(', ')}`, EXIT.usage);
      const timeout = Number(o.timeout);
      if (!Number.isFinite(timeout) || timeout < 0)
        throw new CliError(`--timeout: not a number of seconds: "${o.timeout}"`, EXIT.usage);
      const { Kube, loadKubeConfig } = await import('../../operator/runtime/kube.ts');
      const kube = new Kube(loadKubeConfig(o.kubeconfig));
      const r = await drain(kube, {
        policy: o.policy,
        namespaces: o.namespaces ? String(o.namespaces).split(',').filter(Boolean) : undefined,
        instance: o.instance || undefined,
        timeoutMs: timeout * 1000,
        progress: (line) => io.err(`drain: ${line}\n`),
      });
      if (r.left.length)
        throw new CliError(
          `drain: ${r.left.length} objects still there after ${timeout}s (is the operator running?): ${r.left.slice(0, 10).join(', ')}`,
          EXIT.failed,
        );
    });
}
