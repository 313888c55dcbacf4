import { Command, Option } from 'commander';
import { CliError, type CliIO, EXIT } from '../io.ts';
import { kubeFrom, withKubeOptions } from '../kube-options.ts';

export function drainCommand(io: CliIO): Command {
  return withKubeOptions(
    new Command('drain')
      .description(
        "take an installation's edge.tunnel.dev objects out of its hands before uninstalling: Orphan (keep objects and remote resources, drop the finalizers; the operator must be stopped: --stop-deployment does that), Retain (delete the objects, keep the remote resources), Delete (delete both; the operator must run)",
      )
      .addOption(new Option('--policy <policy>', 'Orphan, Retain or Delete').makeOptionMandatory()),
  )
    .addOption(
      new Option('--namespaces <list>', 'comma-separated namespaces (default: all)').env('WATCH_NAMESPACES'),
    )
    .addOption(
      new Option('--instance <name>', "the installation's instance label value").env('EDGE_INSTANCE'),
    )
    .addOption(
      new Option(
        '--account <account>',
        'only objects of this account, as status.account shows it: installation, EdgeAccount/<namespace>/<name> or ClusterEdgeAccount/<name>',
      ),
    )
    .addOption(
      new Option(
        '--stop-deployment <namespace/name>',
        "scale the operator's Deployment to 0 and wait until none of its pods is left (Orphan and Retain: first; Delete: once the operator has deleted the objects), then remove the accounts' finalizers too",
      ),
    )
    .addOption(
      new Option(
        '--timeout <seconds>',
        'with Delete: how long to wait for the operator; with --stop-deployment: for its pods to be gone; with any policy: how long an API server out of reach is tried again',
      ).default('300'),
    )
    .action(async (o) => {
      const { DRAIN_POLICIES, drain, parseDeploymentRef } = await import('../../operator/drain.ts');
      if (!(DRAIN_POLICIES as readonly string[]).includes(o.policy))
        throw new CliError(`--policy: "${o.policy}" is not one of ${DRAIN_POLICIES.join(', ')}`, EXIT.usage);
      const timeout = Number(o.timeout);
      if (!Number.isFinite(timeout) || timeout < 0)
        throw new CliError(`--timeout: not a number of seconds: "${o.timeout}"`, EXIT.usage);
      let stop: { namespace: string; name: string } | undefined;
      if (o.stopDeployment !== undefined) {
        stop = parseDeploymentRef(String(o.stopDeployment));
        if (!stop)
          throw new CliError(
            `--stop-deployment: ${JSON.stringify(o.stopDeployment)} is not namespace/name`,
            EXIT.usage,
          );
      }
      if (
        o.account !== undefined &&
        !/^(installation|EdgeAccount\/[a-z0-9][-a-z0-9]*\/[a-z0-9][-.a-z0-9]*|ClusterEdgeAccount\/[a-z0-9][-.a-z0-9]*)$/.test(
          String(o.account),
        )
      )
        throw new CliError(
          `--account: ${JSON.stringify(o.account)} is not installation, EdgeAccount/<namespace>/<name> or ClusterEdgeAccount/<name>`,
          EXIT.usage,
        );
      const kube = await kubeFrom(o);
      const r = await drain(kube, {
        policy: o.policy,
        namespaces: o.namespaces ? String(o.namespaces).split(',').filter(Boolean) : undefined,
        instance: o.instance || undefined,
        account: o.account,
        timeoutMs: timeout * 1000,
        stopDeployment: stop,
        progress: (line) => io.err(`drain: ${line}\n`),
      });
      if (r.left.length)
        throw new CliError(
          o.policy === 'Orphan'
            ? `drain: ${r.left.length} objects got their finalizer back (an operator still runs: stop it, or use --stop-deployment): ${r.left.slice(0, 10).join(', ')}`
            : `drain: ${r.left.length} objects still there after ${timeout}s (is the operator running?): ${r.left.slice(0, 10).join(', ')}`,
          EXIT.failed,
        );
    });
}
