// The chart's tenant roles: ClusterRoles aggregated to the built-in edit, view and admin, over
// every namespaced kind the chart ships (files/crds), never a status subresource, never a
// cluster-scoped kind (ClusterEdgeAccount); tenantRoles.enabled=false leaves them out.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { cacheDir, REPO_ROOT } from '../../src/localcluster/cluster.ts';

const HELM = process.env.HELM ?? join(cacheDir(), 'bin', 'helm');
const skipReason = existsSync(HELM)
  ? undefined
  : `no helm at ${HELM} (set HELM, or run test/controlplane/build.sh)`;
const CHART = join(REPO_ROOT, 'helm/edge-operator');
/** The test control plane's (test/controlplane/kube). */
const KUBE_VERSION = '1.35.0';
const AGG = 'rbac.authorization.k8s.io/aggregate-to-';

interface Role {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
}

function render(...set: string[]): Role[] {
  const out = execFileSync(
    HELM,
    [
      'template',
      'eo',
      CHART,
      '--namespace',
      'edge-system',
      // the chart's kubeVersion is checked against it (without it: the version helm was built with)
      '--kube-version',
      KUBE_VERSION,
      ...['api.url=https://api.example.com', ...set].flatMap((s) => ['--set', s]),
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return parseAllDocuments(out)
    .map((d) => d.toJS() as Role)
    .filter(Boolean);
}

/** The chart's CRDs by scope, read from its files (what the template derives the roles from). */
const crds = readdirSync(join(CHART, 'files/crds')).map(
  (f) =>
    parse(readFileSync(join(CHART, 'files/crds', f), 'utf8')) as {
      spec: { scope: string; names: { plural: string } };
    },
);
const namespaced = crds.filter((c) => c.spec.scope === 'Namespaced').map((c) => c.spec.names.plural);
const clusterScoped = crds.filter((c) => c.spec.scope === 'Cluster').map((c) => c.spec.names.plural);

/** The ClusterRoles aggregated to a built-in role. */
const aggregatedTo = (objs: Role[], builtin: string) =>
  objs.filter((o) => o.kind === 'ClusterRole' && o.metadata.labels?.[`${AGG}${builtin}`] === 'true');

describe.skipIf(!!skipReason)('chart: tenant roles', () => {
  const objs = skipReason ? [] : render();
  const rulesOf = (builtin: string) => aggregatedTo(objs, builtin).flatMap((r) => r.rules ?? []);

  it('edit: every namespaced kind, read and write', () => {
    const rules = rulesOf('edit').filter((r) => r.verbs.includes('create'));
    expect(rules).toHaveLength(1);
    expect(rules[0]!.apiGroups).toEqual(['edge.tunnel.dev']);
    expect([...rules[0]!.resources].sort()).toEqual([...namespaced].sort());
    expect([...rules[0]!.verbs].sort()).toEqual(
      ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'].sort(),
    );
    // edit is part of admin: a namespace admin gets the same
    expect(aggregatedTo(objs, 'admin').map((r) => r.metadata.name)).toEqual(
      expect.arrayContaining(aggregatedTo(objs, 'edit').map((r) => r.metadata.name)),
    );
  });

  it('view: every namespaced kind, read only', () => {
    const rules = rulesOf('view');
    expect(rules).toHaveLength(1);
    expect([...rules[0]!.resources].sort()).toEqual([...namespaced].sort());
    expect([...rules[0]!.verbs].sort()).toEqual(['get', 'list', 'watch']);
  });

  it('never a status subresource, never a cluster-scoped kind, nothing but edge.tunnel.dev', () => {
    const all = [...rulesOf('edit'), ...rulesOf('view'), ...rulesOf('admin')];
    expect(all.length).toBeGreaterThan(0);
    for (const r of all) {
      expect(r.apiGroups).toEqual(['edge.tunnel.dev']);
      expect(r.resources.filter((x) => x.includes('/'))).toEqual([]);
      expect(r.resources.filter((x) => clusterScoped.includes(x) || /^cluster/.test(x))).toEqual([]);
    }
  });

  it('tenantRoles.enabled=false: no role aggregated to a built-in one', () => {
    const off = render('tenantRoles.enabled=false');
    for (const b of ['edit', 'view', 'admin']) expect(aggregatedTo(off, b)).toEqual([]);
    // the operator's own roles stay
    expect(off.some((o) => o.kind === 'ClusterRole' && o.metadata.name === 'eo-edge-operator')).toBe(true);
  });
});
