import { Command, Option } from 'commander';
import type { KubeObject } from '../../operator/runtime/kube/kube.ts';
import { VERSION } from '../../version.ts';
import { CliError, type CliIO } from '../io.ts';
import { kubeFrom, withKubeOptions } from '../kube-options.ts';

/** What the chart and the kustomize base label the operator's Deployment with. */
export const OPERATOR_SELECTOR = 'app.kubernetes.io/name=edge-operator';
const DEPLOYMENTS = { group: 'apps', version: 'v1', plural: 'deployments' };
const TIMEOUT_MS = 10_000;

interface Deployment extends KubeObject {
  spec?: {
    replicas?: number;
    template?: { spec?: { containers?: { name?: string; image?: string; args?: string[] }[] } };
  };
  status?: { replicas?: number; readyReplicas?: number };
}

/** An image reference's tag (registry:port/repo:tag@digest), if it has one. */
export function imageTag(image: string): string | undefined {
  const last = image.replace(/@.*$/, '').split('/').at(-1) ?? '';
  const i = last.lastIndexOf(':');
  return i >= 0 ? last.slice(i + 1) || undefined : undefined;
}

/**
 * The operator a Deployment runs, in one line: its image's tag when that is a version (the
 * image says what runs, whatever the labels say), else the app.kubernetes.io/version label.
 */
export function describeOperator(d: Deployment): string {
  const containers = d.spec?.template?.spec?.containers ?? [];
  const c =
    containers.find((x) => x.args?.[0] === 'operator') ??
    containers.find((x) => x.name === 'operator') ??
    containers[0];
  const tag = c?.image ? imageTag(c.image) : undefined;
  const label = d.metadata.labels?.['app.kubernetes.io/version'];
  const version = (tag && /^v?\d+\.\d+/.test(tag) ? tag : (label ?? tag)) ?? 'unknown';
  const where = [
    `${d.metadata.namespace}/${d.metadata.name}`,
    ...(c?.image ? [`image ${c.image}`] : []),
    // the replicas asked for: status counts only what a controller has made so far
    `${d.status?.readyReplicas ?? 0}/${d.spec?.replicas ?? d.status?.replicas ?? 0} ready`,
  ];
  return `operator: ${version} (${where.join(', ')})`;
}

const firstLine = (e: unknown) => String((e as Error)?.message ?? e).split('\n')[0] ?? '';

export function versionCommand(io: CliIO): Command {
  return withKubeOptions(
    new Command('version')
      .description(
        `print the version of edgectl and of the operator in the cluster: edgectl's and Node's, then the operator's from its Deployment (labelled ${OPERATOR_SELECTOR}; read-only), or "operator: not found" and why`,
      )
      .option('--client', "edgectl's version only: no cluster is asked")
      .addOption(new Option('-n, --namespace <ns>', "the operator's namespace (default: every namespace)")),
  ).action(async (o) => {
    io.out(`client: ${VERSION} (node ${process.versions.node})\n`);
    if (o.client) return;
    const notFound = (why: string) => io.out(`operator: not found (${why})\n`);
    let kube: Awaited<ReturnType<typeof kubeFrom>>;
    try {
      kube = await kubeFrom(o);
    } catch (err) {
      // a kubeconfig or context asked for by name must work; without one, there may be no cluster
      if (err instanceof CliError || o.kubeconfig !== undefined || o.context !== undefined) throw err;
      notFound(firstLine(err));
      return;
    }
    const { KubeError, resourceUrl } = await import('../../operator/runtime/kube/kube.ts');
    const ns = o.namespace as string | undefined;
    const where = ns ? `in namespace ${ns}` : 'in any namespace';
    let items: Deployment[];
    try {
      const list = await kube.request<{ items?: Deployment[] | null }>('GET', resourceUrl(DEPLOYMENTS, ns), {
        query: { labelSelector: OPERATOR_SELECTOR, limit: 100 },
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      items = list?.items ?? [];
    } catch (err) {
      if (err instanceof KubeError && err.status === 403)
        notFound(
          `not allowed to list Deployments ${ns ? `in namespace ${ns}` : 'in every namespace: give -n <namespace>'}`,
        );
      else if ((err as Error)?.name === 'TimeoutError' || (err as Error)?.name === 'AbortError')
        notFound(`${kube.server} did not answer within ${TIMEOUT_MS / 1000}s`);
      else notFound(`${kube.server}: ${firstLine(err)}`);
      return;
    }
    if (!items.length) {
      notFound(`no Deployment labelled ${OPERATOR_SELECTOR} ${where} of ${kube.server}`);
      return;
    }
    items.sort((a, b) =>
      `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(
        `${b.metadata.namespace}/${b.metadata.name}`,
      ),
    );
    for (const d of items) io.out(`${describeOperator(d)}\n`);
  });
}
