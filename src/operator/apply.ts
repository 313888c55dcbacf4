// Server-side apply of manifests (CRDs, namespaces, secrets, our kinds) without kubectl:
// the demo and the e2e setup use it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { BINDINGS } from './kinds/index.ts';
import type { Kube, KubeObject, ResourcePath } from './runtime/kube/kube.ts';
import { resourceUrl } from './runtime/kube/kube.ts';

const BUILTIN: Record<string, ResourcePath & { namespaced: boolean }> = {
  'apiextensions.k8s.io/v1/CustomResourceDefinition': {
    group: 'apiextensions.k8s.io',
    version: 'v1',
    plural: 'customresourcedefinitions',
    namespaced: false,
  },
  'v1/Namespace': { group: '', version: 'v1', plural: 'namespaces', namespaced: false },
  'v1/Secret': { group: '', version: 'v1', plural: 'secrets', namespaced: true },
  'v1/ConfigMap': { group: '', version: 'v1', plural: 'configmaps', namespaced: true },
  'v1/ServiceAccount': { group: '', version: 'v1', plural: 'serviceaccounts', namespaced: true },
  'v1/Service': { group: '', version: 'v1', plural: 'services', namespaced: true },
  'v1/Pod': { group: '', version: 'v1', plural: 'pods', namespaced: true },
  'apps/v1/Deployment': { group: 'apps', version: 'v1', plural: 'deployments', namespaced: true },
  'batch/v1/Job': { group: 'batch', version: 'v1', plural: 'jobs', namespaced: true },
  'networking.k8s.io/v1/NetworkPolicy': {
    group: 'networking.k8s.io',
    version: 'v1',
    plural: 'networkpolicies',
    namespaced: true,
  },
  'policy/v1/PodDisruptionBudget': {
    group: 'policy',
    version: 'v1',
    plural: 'poddisruptionbudgets',
    namespaced: true,
  },
  'rbac.authorization.k8s.io/v1/ClusterRole': {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'clusterroles',
    namespaced: false,
  },
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'clusterrolebindings',
    namespaced: false,
  },
  'rbac.authorization.k8s.io/v1/Role': {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'roles',
    namespaced: true,
  },
  'rbac.authorization.k8s.io/v1/RoleBinding': {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'rolebindings',
    namespaced: true,
  },
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy': {
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    plural: 'validatingadmissionpolicies',
    namespaced: false,
  },
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding': {
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    plural: 'validatingadmissionpolicybindings',
    namespaced: false,
  },
};

export function resourceFor(obj: KubeObject): ResourcePath & { namespaced: boolean } {
  const builtin = BUILTIN[`${obj.apiVersion}/${obj.kind}`];
  if (builtin) return builtin;
  const b = BINDINGS.find((x) => x.kind === obj.kind);
  const [group, version] = (obj.apiVersion ?? '').split('/');
  if (b && group && version) return { group, version, plural: b.plural, namespaced: true };
  throw new Error(`apply: unsupported kind ${obj.apiVersion} ${obj.kind}`);
}

export function readManifests(path: string): KubeObject[] {
  const files = statSync(path).isDirectory()
    ? readdirSync(path)
        .filter((f) => /\.ya?ml$/.test(f))
        .sort()
        .map((f) => join(path, f))
    : [path];
  return files.flatMap((f) =>
    parseAllDocuments(readFileSync(f, 'utf8'))
      .map((d) => d.toJS() as KubeObject)
      .filter(Boolean),
  );
}

/** Server-side apply; with dryRun the API server admits and validates but stores nothing. */
export async function apply(
  kube: Kube,
  objs: KubeObject[],
  defaultNamespace = 'default',
  opts: { dryRun?: boolean } = {},
): Promise<void> {
  for (const obj of objs) {
    const r = resourceFor(obj);
    const ns = r.namespaced ? (obj.metadata.namespace ?? defaultNamespace) : undefined;
    const body = r.namespaced ? { ...obj, metadata: { ...obj.metadata, namespace: ns } } : obj;
    await kube.request('PATCH', resourceUrl(r, ns, obj.metadata.name), {
      body,
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'edge-operator-apply', force: true, dryRun: opts.dryRun ? 'All' : undefined },
    });
  }
  // CRDs must be established before objects of their kinds are accepted
  for (const obj of objs.filter((o) => o.kind === 'CustomResourceDefinition' && !opts.dryRun)) {
    for (let i = 0; i < 100; i++) {
      const crd = await kube.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
        BUILTIN['apiextensions.k8s.io/v1/CustomResourceDefinition']!,
        undefined,
        obj.metadata.name,
      );
      if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      await new Promise((res) => setTimeout(res, 100));
    }
  }
}
