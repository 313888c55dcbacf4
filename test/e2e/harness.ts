// The e2e world: the API server the global setup provides, an emulator, a namespace.
import { inject } from 'vitest';
import { createClient, type EdgeClient } from '../../src/api/client.ts';
import { type Emulator, type EmulatorOptions, startEmulator } from '../../src/emulator/server.ts';
import { accountResource } from '../../src/operator/kinds/accounts.ts';
import { Kube } from '../../src/operator/runtime/kube/kube.ts';
import { kubeconfigTarget } from '../../src/operator/runtime/kube/kubeconfig-target.ts';
import {
  freePort,
  metrics,
  NAMESPACES,
  type OperatorProcess,
  startOperatorProcess,
  sumMetric,
} from '../support/operator.ts';

export {
  condition,
  Fatal,
  freePort,
  NAMESPACES,
  type OperatorProcess,
  obj,
  ready,
  res,
  waitFor,
} from '../support/operator.ts';

export const skipReason = inject('e2eSkip');
const SECRETS = { group: '', version: 'v1', plural: 'secrets' };
export const kubeconfig = inject('kubeconfig');

export async function startOperator(
  emu: Emulator,
  namespace: string,
  extra: string[] = [],
): Promise<OperatorProcess> {
  return startOperatorProcess({
    emu,
    kubeconfig,
    namespace,
    clusterId: `e2e-${namespace}`,
    port: await freePort(),
    extra: ['--api-rate-limit', '100000', ...extra],
    logLevel: 'debug',
  });
}

export interface World {
  kube: Kube;
  emu: Emulator;
  api: EdgeClient;
  ns: string;
  close(): Promise<void>;
}

export async function world(prefix: string, emulator: EmulatorOptions = {}): Promise<World> {
  const kube = new Kube(kubeconfigTarget(kubeconfig));
  const emu = await startEmulator(emulator);
  const api = createClient({ baseUrl: emu.url, apiKey: emu.apiKey, rateLimitPerMinute: Infinity });
  const ns = `${prefix}-${Date.now().toString(36)}`;
  await kube.create(NAMESPACES, undefined, { metadata: { name: ns } });
  return {
    kube,
    emu,
    api,
    ns,
    close: async () => {
      await kube.delete(NAMESPACES, undefined, ns).catch(() => {});
      await api.close();
      await emu.close();
    },
  };
}

/** A namespace's EdgeAccount (`default` unless named), its key in a Secret of that namespace. */
export async function edgeAccount(
  kube: Kube,
  ns: string,
  o: {
    secret: string;
    key: string;
    name?: string;
    apiURL?: string;
    rateLimitPerMinute?: number;
    labels?: Record<string, string>;
  },
): Promise<void> {
  await kube.create(SECRETS, ns, { metadata: { name: o.secret, namespace: ns }, stringData: { key: o.key } });
  await kube.create(accountResource('EdgeAccount'), ns, {
    apiVersion: 'edge.tunnel.dev/v1alpha1',
    kind: 'EdgeAccount',
    metadata: { name: o.name ?? 'default', namespace: ns, ...(o.labels && { labels: o.labels }) },
    spec: {
      apiKeySecretRef: { name: o.secret, key: 'key' },
      ...(o.apiURL && { apiURL: o.apiURL }),
      ...(o.rateLimitPerMinute && { rateLimitPerMinute: o.rateLimitPerMinute }),
    },
  });
}

/** The sum of a metric's series whose labels include these. */
export async function metric(
  url: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const all = await metrics(url);
  const plain = all.get(name) ?? 0;
  return (
    plain + sumMetric(all, name, (l) => Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)))
  );
}

/** A client of the test control plane acting as `user` (impersonation: RBAC and admission as theirs). */
export function impersonating(user: string): Kube {
  const target = kubeconfigTarget(kubeconfig);
  return new Kube({
    server: target.server,
    context: target.context,
    auth: async () => {
      const a = await target.auth();
      return { ...a, headers: { ...a.headers, 'Impersonate-User': user } };
    },
  });
}
