// A pod on its service account (what the chart runs) needs two files and two variables, read
// here (in-cluster-target.ts); anything else is a kubeconfig, read by @kubernetes/client-node's
// KubeConfig (kubeconfig-target.ts), loaded only then: it brings its auth providers, proxy
// agents and two YAML parsers, memory a pod never uses. The requests are the project's own in
// either case (kube.ts, on undici).
import { inClusterTarget } from './in-cluster-target.ts';
import type { KubeTarget } from './kube-target.ts';

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * In-cluster (KUBERNETES_SERVICE_HOST set, no kubeconfig and no context named), else the
 * kubeconfig file given, else $KUBECONFIG (files merged), else ~/.kube/config; with `context`,
 * that context of the kubeconfig instead of its current one.
 */
export async function loadKubeConfig(path?: string, context?: string): Promise<KubeTarget> {
  if (!path && context === undefined && !process.env.KUBECONFIG && process.env.KUBERNETES_SERVICE_HOST)
    return inClusterTarget(process.env.EDGE_SERVICE_ACCOUNT_DIR ?? SERVICE_ACCOUNT_DIR);
  const { kubeconfigTarget } = await import('./kubeconfig-target.ts');
  return kubeconfigTarget(path, context);
}
