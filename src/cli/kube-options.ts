// --kubeconfig and --context (kubectl's names) for every command that reads or writes a cluster,
// and the client they make.
import { type Command, Option } from 'commander';
import type { Kube } from '../operator/runtime/kube/kube.ts';
import { CliError, EXIT } from './io.ts';

export interface KubeOptions {
  kubeconfig?: string;
  context?: string;
}

export function withKubeOptions(cmd: Command): Command {
  return cmd
    .addOption(
      new Option('--kubeconfig <path>', 'kubeconfig (default: KUBECONFIG, ~/.kube/config, in-cluster)'),
    )
    .addOption(
      new Option('--context <name>', "the kubeconfig's context to use (default: its current-context)"),
    );
}

/**
 * The cluster the options name. A context the kubeconfig does not have is a usage error
 * naming it (and the contexts there are); any other unusable kubeconfig says what is wrong.
 */
export async function kubeFrom(o: KubeOptions): Promise<Kube> {
  if (o.context !== undefined && !o.context.trim())
    throw new CliError('--context: a context name is required, not an empty string', EXIT.usage);
  const [{ Kube, loadKubeConfig }, { UnknownContextError }] = await Promise.all([
    import('../operator/runtime/kube/kube.ts'),
    import('../operator/runtime/kube/kube-target.ts'),
  ]);
  try {
    return new Kube(await loadKubeConfig(o.kubeconfig, o.context));
  } catch (err) {
    if (err instanceof UnknownContextError) throw new CliError(`--context: ${err.message}`, EXIT.usage);
    throw err;
  }
}
