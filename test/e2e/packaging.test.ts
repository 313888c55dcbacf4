// The chart and the kustomize base against a real API server: accepted by server-side dry
// run, installed and uninstalled for real, least-privilege RBAC, restricted pod security.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { cacheDir, clusterDown, clusterUp, REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { apply } from '../../src/operator/apply.ts';
import { drain, parseDeploymentRef } from '../../src/operator/drain.ts';
import { accountResource } from '../../src/operator/kinds/accounts.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { FINALIZER } from '../../src/operator/runtime/constants.ts';
import { KEY_FINALIZER } from '../../src/operator/runtime/kube/holds.ts';
import { Kube, KubeError, type KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { kubeconfigTarget } from '../../src/operator/runtime/kube/kubeconfig-target.ts';
import { renderBase } from '../packaging/render-base.ts';
import { imageEnv } from '../support/operator.ts';
import {
  impersonating,
  kubeconfig,
  NAMESPACES,
  res,
  skipReason,
  type World,
  waitFor,
  world,
} from './harness.ts';

const bin = (name: string) => join(cacheDir(), 'bin', name);
const haveTools = existsSync(bin('helm')) && existsSync(bin('kustomize')) && existsSync(bin('actionlint'));
if (!skipReason && !haveTools && process.env.CI)
  throw new Error('helm/kustomize/actionlint not built: run test/controlplane/build.sh');
const CHART = join(REPO_ROOT, 'helm/edge-operator');
const docs = (yaml: string) =>
  parseAllDocuments(yaml)
    .map((d) => d.toJS() as KubeObject)
    .filter(Boolean);
const helm = (...args: string[]) =>
  execFileSync(bin('helm'), [...args, '--kubeconfig', kubeconfig], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
const helmTemplate = (set: string[]) =>
  execFileSync(
    bin('helm'),
    [
      'template',
      'edge-operator',
      CHART,
      '--namespace',
      'edge-system',
      '--kube-version',
      '1.35.0',
      ...set.flatMap((s) => ['--set', s]),
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
/** Rendered with an API URL unless the settings give one (later --set values win). */
const template = (...set: string[]) => docs(helmTemplate(['api.url=https://api.example.com', ...set]));

interface NetworkPolicySpec {
  podSelector: { matchLabels: Record<string, string> };
  policyTypes: string[];
  ingress: { ports?: { port: number | string; protocol?: string }[]; from?: object[] }[];
  egress?: { ports?: { port: number | string; protocol?: string }[]; to?: object[] }[];
}
const networkPolicies = (objs: KubeObject[]) =>
  objs
    .filter((o) => o.kind === 'NetworkPolicy')
    .map((o) => (o as unknown as { spec: NetworkPolicySpec }).spec);

/** Server-side dry run of rendered manifests (the chart's NetworkPolicy too). */
const dryRun = (kube: Kube, objs: KubeObject[], namespace: string) =>
  apply(kube, objs, namespace, { dryRun: true });

describe.skipIf(!!skipReason || !haveTools)('packaging', () => {
  let w: World;
  beforeAll(async () => {
    w = await world('pkg');
  });
  afterAll(async () => {
    await w?.close();
  });

  it('the release workflow passes actionlint and publishes the image and chart the chart points at', () => {
    const workflow = join(REPO_ROOT, '.github/workflows/release.yml');
    expect(() =>
      execFileSync(bin('actionlint'), [workflow], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }),
    ).not.toThrow();
    const wf = docs(readFileSync(workflow, 'utf8'))[0] as unknown as { env: { IMAGE: string } };
    const values = docs(readFileSync(join(CHART, 'values.yaml'), 'utf8'))[0] as unknown as {
      image: { repository: string };
    };
    expect(wf.env.IMAGE).toBe(values.image.repository);
    expect(readFileSync(workflow, 'utf8')).toContain('platforms: linux/amd64,linux/arm64');
  });

  it('helm lint --strict is clean', () => {
    expect(() =>
      execFileSync(bin('helm'), ['lint', '--strict', CHART, '--set', 'api.url=https://api.example.com'], {
        encoding: 'utf8',
      }),
    ).not.toThrow();
  });

  it('refuses to render without an API URL; the emulator runs only when asked for by name', () => {
    let err = '';
    try {
      helmTemplate([]);
    } catch (e) {
      err = String((e as { stderr?: string }).stderr);
    }
    expect(err).toMatch(/api/);
    expect(err).toMatch(/url/);
    const env = (objs: KubeObject[]) =>
      (
        objs.find((o) => o.kind === 'Deployment') as unknown as {
          spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
        }
      ).spec.template.spec.containers[0]!.env;
    const demo = env(docs(helmTemplate(['api.emulator=true'])));
    expect(demo).toContainEqual({ name: 'EDGE_EMULATOR', value: 'true' });
    expect(demo.some((e) => e.name === 'EDGE_API_URL')).toBe(false);
    const real = env(template('instance=blue'));
    expect(real).toContainEqual({ name: 'EDGE_API_URL', value: 'https://api.example.com' });
    expect(real).toContainEqual({ name: 'EDGE_INSTANCE', value: 'blue' });
    expect(real.some((e) => e.name === 'EDGE_EMULATOR')).toBe(false);
    // the schema mirrors the operator's bounds
    for (const bad of [
      'resyncPeriod=0s',
      'resyncPeriod=5s',
      'concurrency=100000',
      'api.rateLimitPerMinute=0',
    ])
      expect(() => template(bad), bad).toThrow();
    expect(() => template('resyncPeriod=10s', 'concurrency=64')).not.toThrow();
  });

  it("the pod's Node keeps the image's memory flags and gets a heap limit from the memory limit", () => {
    const env = (limit: string) => {
      const d = template(`resources.limits.memory=${limit}`).find((o) => o.kind === 'Deployment')!;
      const c = (
        d.spec as { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } }
      ).template.spec.containers[0]!;
      return c.env.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '';
    };
    const image = imageEnv().NODE_OPTIONS!.split(' ');
    expect(image.length).toBeGreaterThan(0);
    for (const [limit, heap] of [
      ['256Mi', 192],
      ['1Gi', 768],
    ] as const) {
      const flags = env(limit).split(' ');
      expect(flags).toEqual(expect.arrayContaining([...image, `--max-old-space-size=${heap}`]));
    }
  });

  it('a NetworkPolicy lets only the monitoring namespace reach /metrics by default; selectors are values', () => {
    const objs = template();
    const [np, ...more] = networkPolicies(objs);
    expect(more).toEqual([]);
    // it selects the operator's pods
    const deploy = objs.find((o) => o.kind === 'Deployment') as unknown as {
      spec: { template: { metadata: { labels: Record<string, string> } } };
    };
    expect(np!.podSelector.matchLabels).toEqual({
      'app.kubernetes.io/name': 'edge-operator',
      'app.kubernetes.io/instance': 'edge-operator',
    });
    expect(deploy.spec.template.metadata.labels).toMatchObject(np!.podSelector.matchLabels);
    // ingress only, to the metrics port, from the namespace named monitoring; egress untouched
    expect(np!.policyTypes).toEqual(['Ingress']);
    expect(np!.ingress).toEqual([
      {
        ports: [{ port: 8080, protocol: 'TCP' }],
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
      },
    ]);
    expect(np!.egress).toBeUndefined();
    // the kustomize base has the same policy
    expect(networkPolicies(docs(readFileSync(join(REPO_ROOT, 'deploy/base/operator.yaml'), 'utf8')))).toEqual(
      [np],
    );

    // off when disabled
    expect(networkPolicies(template('networkPolicy.enabled=false'))).toEqual([]);

    // custom namespaces, a pod selector within them, extra peers and rules, another port
    const [custom] = networkPolicies(
      template(
        'networkPolicy.metrics.namespaces={observability,prometheus}',
        'networkPolicy.metrics.podSelector.matchLabels.app=prometheus',
        'networkPolicy.metrics.extraFrom[0].podSelector.matchLabels.app=debug',
        'networkPolicy.metrics.extraFrom[1].namespaceSelector.matchLabels.team=obs',
        'networkPolicy.metrics.extraFrom[1].podSelector.matchLabels.app=vmagent',
        'networkPolicy.extraIngress[0].from[0].ipBlock.cidr=10.0.0.0/24',
        'networkPolicy.extraIngress[0].ports[0].port=8080',
        'metrics.service.port=9090',
      ),
    );
    const ns = (name: string) => ({ matchLabels: { 'kubernetes.io/metadata.name': name } });
    const prometheus = { matchLabels: { app: 'prometheus' } };
    expect(custom!.ingress).toEqual([
      {
        ports: [{ port: 9090, protocol: 'TCP' }],
        from: [
          { namespaceSelector: ns('observability'), podSelector: prometheus },
          { namespaceSelector: ns('prometheus'), podSelector: prometheus },
          { podSelector: { matchLabels: { app: 'debug' } } },
          {
            namespaceSelector: { matchLabels: { team: 'obs' } },
            podSelector: { matchLabels: { app: 'vmagent' } },
          },
        ],
      },
      { from: [{ ipBlock: { cidr: '10.0.0.0/24' } }], ports: [{ port: 8080 }] },
    ]);
    // no peers at all: nothing but the node (the probes) may connect
    expect(networkPolicies(template('networkPolicy.metrics.namespaces=null'))[0]!.ingress).toEqual([]);

    // egress is opt-in: DNS and the rules (by default TCP 443 and 6443)
    const [egress] = networkPolicies(template('networkPolicy.egress.enabled=true'));
    expect(egress!.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(egress!.egress).toEqual([
      {
        ports: [
          { port: 53, protocol: 'UDP' },
          { port: 53, protocol: 'TCP' },
        ],
      },
      {
        ports: [
          { port: 443, protocol: 'TCP' },
          { port: 6443, protocol: 'TCP' },
        ],
      },
    ]);

    // the schema is strict here too
    for (const bad of [
      'networkPolicy.enabled=maybe',
      'networkPolicy.namespaces={monitoring}',
      'networkPolicy.metrics.namespaces={Not_A_Namespace}',
      'networkPolicy.metrics.extraFrom[0].podSelectr.app=x',
      'networkPolicy.egress.rules[0].ports[0].protocol=HTTP',
    ])
      expect(() => template(bad), bad).toThrow();
  });

  it('numbers reach the operator as plain decimal, whatever Helm parsed them as', () => {
    const dir = mkdtempSync(join(tmpdir(), 'edge-values-'));
    try {
      // a number from a values file is a float to Helm: 1000000 would render as 1e+06
      const values = join(dir, 'values.yaml');
      writeFileSync(values, 'api: {rateLimitPerMinute: 1000000}\nconcurrency: 64\n');
      const env = (
        docs(
          execFileSync(
            bin('helm'),
            ['template', 'eo', CHART, '--set', 'api.url=https://api.example.com', '-f', values],
            { encoding: 'utf8' },
          ),
        ).find((o) => o.kind === 'Deployment') as unknown as {
          spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
        }
      ).spec.template.spec.containers[0]!.env;
      expect(env).toContainEqual({ name: 'EDGE_API_RATE_LIMIT', value: '1000000' });
      expect(env).toContainEqual({ name: 'EDGE_CONCURRENCY', value: '64' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // what the operator refuses at start, the schema refuses at install
    for (const bad of ['clusterId=' + 'x'.repeat(64), 'clusterId=prod eu', 'api.key=a b'])
      expect(() => template(bad), bad).toThrow();
    expect(() => template('clusterId=' + 'x'.repeat(63), 'api.key=k-1')).not.toThrow();
  });

  it('deploy/base/operator.yaml is the chart rendered (npm run deploy:base)', () => {
    expect(readFileSync(join(REPO_ROOT, 'deploy/base/operator.yaml'), 'utf8')).toBe(renderBase());
  });

  it('the rendered RBAC has no wildcard and covers every kind, its status and finalizers', () => {
    for (const set of [[], ['watchNamespaces={a,b}']]) {
      const roles = template(...set).filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role');
      const rules = roles.flatMap(
        (r) =>
          (r as unknown as { rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[] }).rules,
      );
      for (const r of rules)
        for (const x of [...r.apiGroups, ...r.resources, ...r.verbs]) expect(x).not.toContain('*');
      const edge = rules.filter((r) => r.apiGroups.includes('edge.tunnel.dev')).flatMap((r) => r.resources);
      for (const b of BINDINGS)
        for (const res of [b.plural, `${b.plural}/status`, `${b.plural}/finalizers`])
          expect(edge).toContain(res);
      // the operator writes by PATCH only: update (a whole-object PUT) only where a finalizer
      // subresource asks for it, and on the Lease
      const tenants = (r: KubeObject) =>
        Object.keys(r.metadata.labels ?? {}).some((k) =>
          k.startsWith('rbac.authorization.k8s.io/aggregate-to-'),
        );
      const updates = roles
        .filter((r) => !tenants(r))
        .flatMap((r) => (r as unknown as { rules: { resources: string[]; verbs: string[] }[] }).rules)
        .filter((r) => r.verbs.includes('update'))
        .flatMap((r) => r.resources)
        .filter((x) => !x.endsWith('/finalizers'));
      expect(updates).toEqual(['leases']);
      // Secrets: read where objects are (metadata lists, gets by name); in its own namespace the
      // operator may create its digest key and read only that one by name
      const secrets = roles.flatMap((r) =>
        (
          r as unknown as { rules: { resources: string[]; verbs: string[]; resourceNames?: string[] }[] }
        ).rules
          .filter((x) => x.resources.includes('secrets'))
          .map((x) => ({ role: r.metadata.name, verbs: x.verbs, names: x.resourceNames })),
      );
      const own = secrets.filter((x) => x.role.endsWith('-leader-election'));
      expect(own).toEqual([
        { role: 'edge-operator-leader-election', verbs: ['get'], names: ['edge-operator-digest-key'] },
        { role: 'edge-operator-leader-election', verbs: ['create'], names: undefined },
      ]);
      // patch: only the operator's finalizer on a key Secret, which the chart's admission
      // policy enforces (secret-guard.yaml)
      for (const x of secrets.filter((y) => !own.includes(y)))
        expect(x.verbs).toEqual(['get', 'list', 'watch', 'patch']);
      expect(template(...set).map((o) => o.kind)).toEqual(
        expect.arrayContaining(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']),
      );
    }
    // with watchNamespaces: one ClusterRole, granted namespace by namespace by RoleBindings the
    // operator may read and patch (its finalizer) by name, and that the operator is told of
    const watched = template('watchNamespaces={a,b}');
    const bindings = watched.filter((o) => o.kind === 'RoleBinding' && o.metadata.name === 'edge-operator');
    expect(bindings.map((b) => b.metadata.namespace)).toEqual(['a', 'b']);
    for (const b of bindings)
      expect((b as unknown as { roleRef: { kind: string } }).roleRef.kind).toBe('ClusterRole');
    expect(watched.some((o) => o.kind === 'Role' && o.metadata.name === 'edge-operator')).toBe(false);
    const access = (
      watched.find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'edge-operator') as unknown as {
        rules: { resources: string[]; resourceNames?: string[]; verbs: string[] }[];
      }
    ).rules.filter((r) => r.resources.includes('rolebindings'));
    expect(access).toEqual([
      {
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['rolebindings'],
        resourceNames: ['edge-operator'],
        verbs: ['get', 'patch'],
      },
    ]);
    // cluster-wide: no right on any binding
    const wide = template().find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'edge-operator');
    expect(JSON.stringify(wide)).not.toContain('rolebindings');
  });

  it("a NODE_OPTIONS of extraEnv takes the place of the chart's (one entry: server-side apply refuses a name twice); a changed api.key rolls the pods", () => {
    type Pod = {
      metadata: { annotations?: Record<string, string> };
      spec: { containers: { env: { name: string; value?: string }[] }[] };
    };
    const pod = (...set: string[]) =>
      (template(...set).find((o) => o.kind === 'Deployment') as unknown as { spec: { template: Pod } }).spec
        .template;
    const nodeOptions = (p: Pod) => p.spec.containers[0]!.env.filter((e) => e.name === 'NODE_OPTIONS');
    expect(nodeOptions(pod()).map((e) => e.value)).toEqual([
      '--max-semi-space-size=1 --max-old-space-size=384',
    ]);
    expect(
      nodeOptions(pod('extraEnv[0].name=NODE_OPTIONS', 'extraEnv[0].value=--max-old-space-size=200')).map(
        (e) => e.value,
      ),
    ).toEqual(['--max-old-space-size=200']);
    const digest = (p: Pod) => p.metadata.annotations?.['checksum/api-key'];
    const [one, two] = [pod('api.key=one'), pod('api.key=two')];
    expect(digest(one)).toMatch(/^[0-9a-f]{64}$/);
    expect(digest(two)).not.toBe(digest(one));
    expect(JSON.stringify(one.metadata)).not.toContain('one"');
    expect(digest(pod('api.existingSecret=mine'))).toBeUndefined();
  });

  it('helm uninstall drains with drainPolicy: Orphan by default, stopping the operator (first; Delete: last), then the accounts; None: no hook', () => {
    type Pod = { metadata: { labels: Record<string, string> }; spec: { containers: { args: string[] }[] } };
    const hookOf = (objs: KubeObject[]) =>
      objs.filter((o) => o.metadata.annotations?.['helm.sh/hook'] === 'pre-delete');
    const objs = template('instance=blue', 'drain.timeoutSeconds=120', 'podDisruptionBudget.enabled=true');
    const hook = hookOf(objs);
    expect(hook.map((o) => o.kind).sort()).toEqual([
      'ClusterRole',
      'ClusterRoleBinding',
      'Job',
      'Role',
      'RoleBinding',
      'ServiceAccount',
    ]);
    const job = hook.find((o) => o.kind === 'Job') as unknown as {
      spec: { activeDeadlineSeconds: number; template: Pod };
    };
    expect(job.spec.template.spec.containers[0]!.args).toEqual([
      'drain',
      '--policy',
      'Orphan',
      '--stop-deployment',
      'edge-system/edge-operator',
      '--timeout',
      '120',
    ]);
    // stopping the operator, and with Delete waiting for it too: each up to the timeout
    expect(job.spec.activeDeadlineSeconds).toBe(300);
    // the Job's pods are none of the operator's: no selector of the chart matches them
    const deploy = objs.find((o) => o.kind === 'Deployment') as unknown as {
      metadata: { name: string };
      spec: { selector: { matchLabels: Record<string, string> } };
    };
    const labels = job.spec.template.metadata.labels;
    expect(labels['app.kubernetes.io/component']).toBe('drain');
    const matches = (sel: Record<string, string>) => Object.entries(sel).every(([k, v]) => labels[k] === v);
    const selectors = objs.flatMap((o): [string, Record<string, string>][] => {
      const spec = o.spec as {
        selector?: Record<string, string> & { matchLabels?: Record<string, string> };
        podSelector?: { matchLabels: Record<string, string> };
      };
      if (o.kind === 'Service') return [[o.kind, spec.selector!]];
      if (o.kind === 'Deployment' || o.kind === 'PodDisruptionBudget')
        return [[o.kind, spec.selector!.matchLabels!]];
      if (o.kind === 'NetworkPolicy') return [[o.kind, spec.podSelector!.matchLabels]];
      return [];
    });
    expect(selectors.map(([kind]) => kind).sort()).toEqual([
      'Deployment',
      'NetworkPolicy',
      'PodDisruptionBudget',
      'Service',
    ]);
    for (const [kind, sel] of selectors) {
      expect(Object.keys(sel).length, kind).toBeGreaterThan(0);
      expect(matches(sel), kind).toBe(false);
    }
    expect(matches(deploy.spec.selector.matchLabels)).toBe(false);
    // Orphan: the objects keep what they are, so no delete; the Role allows scaling this
    // release's Deployment (by name) and seeing its pods go, nothing more
    const rules = (kind: string) =>
      (
        hook.find((o) => o.kind === kind) as unknown as {
          rules: { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }[];
        }
      ).rules;
    expect(rules('ClusterRole').map((r) => r.verbs)).toEqual([
      ['get', 'list', 'patch'],
      ['get', 'list', 'patch'],
    ]);
    // the accounts' finalizers go once the operator is stopped
    expect(rules('ClusterRole')[1]!.resources).toEqual(['edgeaccounts', 'clusteredgeaccounts']);
    expect(rules('Role')).toEqual([
      {
        apiGroups: ['apps'],
        resources: ['deployments/scale'],
        resourceNames: [deploy.metadata.name],
        verbs: ['get', 'patch'],
      },
      { apiGroups: [''], resources: ['pods'], verbs: ['list'] },
    ]);
    // Delete keeps the operator running while the objects go, then stops it the same way
    const del = hookOf(template('drainPolicy=Delete'));
    expect(del.some((o) => o.kind === 'Role')).toBe(true);
    expect(
      (del.find((o) => o.kind === 'Job') as unknown as { spec: { template: Pod } }).spec.template.spec
        .containers[0]!.args,
    ).toEqual([
      'drain',
      '--policy',
      'Delete',
      '--stop-deployment',
      'edge-system/edge-operator',
      '--timeout',
      '300',
    ]);
    // None (or empty) disables the hook; anything else is refused by the schema
    expect(hookOf(template('drainPolicy=None'))).toEqual([]);
    expect(hookOf(template('drainPolicy='))).toEqual([]);
    expect(() => template('drainPolicy=Forget')).toThrow(/drainPolicy/);
    // the values of earlier charts are refused, naming the replacement
    for (const [old, now] of [
      [['drain.enabled=true', 'drain.policy=Delete'], 'drain.policy=Delete is drainPolicy=Delete'],
      [['drain.enabled=false'], 'drain.enabled=false is drainPolicy=None'],
    ] as const) {
      let err = '';
      try {
        helmTemplate(['api.url=https://api.example.com', ...old]);
      } catch (e) {
        err = String((e as { stderr?: string }).stderr);
      }
      expect(err).toContain('drain.enabled and drain.policy were replaced by drainPolicy');
      expect(err).toContain(now);
    }
  });

  it("the drain Job runs where the operator may (its nodes and taints unless drain's own are set), with requests and limits a quota accepts", () => {
    type PodSpec = {
      nodeSelector?: Record<string, string>;
      tolerations?: { key: string }[];
      affinity?: object;
      priorityClassName?: string;
      containers: { resources: { requests?: Record<string, string>; limits?: Record<string, string> } }[];
    };
    const podOf = (...set: string[]) =>
      (
        template(...set).find(
          (o) => o.kind === 'Job' && o.metadata.annotations?.['helm.sh/hook'] === 'pre-delete',
        ) as unknown as { spec: { template: { spec: PodSpec } } }
      ).spec.template.spec;
    const plain = podOf();
    expect(plain.nodeSelector).toBeUndefined();
    expect(plain.tolerations).toBeUndefined();
    expect(plain.containers[0]!.resources).toEqual({
      requests: { cpu: '10m', memory: '64Mi' },
      limits: { memory: '256Mi' },
    });
    const operators = [
      'nodeSelector.pool=system',
      'tolerations[0].key=dedicated',
      'tolerations[0].operator=Exists',
      'priorityClassName=platform',
      'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=zone',
      'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists',
    ];
    const inherited = podOf(...operators);
    expect(inherited.nodeSelector).toEqual({ pool: 'system' });
    expect(inherited.tolerations).toEqual([{ key: 'dedicated', operator: 'Exists' }]);
    expect(inherited.priorityClassName).toBe('platform');
    // the operator's affinity may name its own pods: the Job's is its own
    expect(inherited.affinity).toBeUndefined();
    const own = podOf(
      ...operators,
      'drain.nodeSelector.pool=jobs',
      'drain.tolerations[0].key=batch',
      'drain.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight=1',
      'drain.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].key=zone',
      'drain.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].operator=Exists',
      'drain.resources.limits.memory=1Gi',
    );
    expect(own.nodeSelector).toEqual({ pool: 'jobs' });
    expect(own.tolerations).toEqual([{ key: 'batch' }]);
    expect(own.affinity).toHaveProperty('nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution');
    expect(own.containers[0]!.resources.limits).toEqual({ memory: '1Gi' });
  });

  it("the Orphan hook's RBAC is what edgectl drain --stop-deployment needs, and no more (impersonating its ServiceAccount)", async () => {
    const release = `d${Date.now().toString(36)}`;
    const objs = docs(
      execFileSync(
        bin('helm'),
        [
          'template',
          release,
          CHART,
          '--namespace',
          w.ns,
          '--kube-version',
          '1.35.0',
          '--set',
          'api.url=https://api.example.com',
          '--set',
          `instance=${release}`,
          '--set',
          'crds.install=false',
        ],
        { encoding: 'utf8' },
      ),
    );
    const hook = objs.filter((o) => o.metadata.annotations?.['helm.sh/hook'] === 'pre-delete');
    const job = hook.find((o) => o.kind === 'Job') as unknown as {
      spec: {
        template: {
          spec: {
            serviceAccountName: string;
            containers: { args: string[]; env: { name: string; value: string }[] }[];
          };
        };
      };
    };
    const container = job.spec.template.spec.containers[0]!;
    const arg = (flag: string) => container.args[container.args.indexOf(flag) + 1]!;
    const deploy = objs.find((o) => o.kind === 'Deployment')!;
    const name = deploy.metadata.name;
    const DEPLOYMENTS = { group: 'apps', version: 'v1', plural: 'deployments' };
    const PODS = { group: '', version: 'v1', plural: 'pods' };
    const cluster = hook.filter((o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding');
    try {
      // the operator's Deployment and the hook's ServiceAccount and RBAC (the Job needs a kubelet)
      await apply(w.kube, [deploy, ...hook.filter((o) => o.kind !== 'Job')], w.ns);
      // a pod of the operator: no kubelet here, so an object with its labels, never scheduled
      const labels = (deploy.spec as { template: { metadata: { labels: Record<string, string> } } }).template
        .metadata.labels;
      await w.kube.create(PODS, w.ns, {
        metadata: { name: `${release}-operator`, labels },
        spec: {
          schedulingGates: [{ name: 'edge.tunnel.dev/test' }],
          containers: [{ name: 'x', image: 'x' }],
        },
      });
      // an account of this installation, with the operator's finalizer
      const EA = accountResource('EdgeAccount');
      await w.kube.create(EA, w.ns, {
        apiVersion: 'edge.tunnel.dev/v1alpha1',
        kind: 'EdgeAccount',
        metadata: {
          name: `${release}-team`,
          labels: { 'edge.tunnel.dev/instance': release },
          finalizers: [FINALIZER],
        },
        spec: { apiKeySecretRef: { name: 'k', key: 'k' } },
      });
      // an object of this installation, with the operator's finalizer
      await w.kube.create(res('ippolicies'), w.ns, {
        apiVersion: 'edge.tunnel.dev/v1alpha1',
        kind: 'IPPolicy',
        metadata: {
          name: `${release}-corp`,
          labels: { 'edge.tunnel.dev/instance': release },
          finalizers: [FINALIZER],
        },
        spec: { description: 'orphaned' },
      });
      const asHook = impersonating(
        `system:serviceaccount:${w.ns}:${job.spec.template.spec.serviceAccountName}`,
      );
      // the Job's own arguments and environment
      expect(arg('--policy')).toBe('Orphan');
      const running = drain(asHook, {
        policy: 'Orphan',
        instance: container.env.find((e) => e.name === 'EDGE_INSTANCE')?.value,
        stopDeployment: parseDeploymentRef(arg('--stop-deployment')),
        timeoutMs: Number(arg('--timeout')) * 1000,
        pollMs: 200,
      });
      const replicas = async () =>
        ((await w.kube.get(DEPLOYMENTS, w.ns, name)).spec as { replicas: number }).replicas;
      await waitFor('scaled to 0', async () => (await replicas()) === 0);
      // while an operator pod is left, the finalizers stay (it would put them back)
      await new Promise((r) => setTimeout(r, 1000));
      const policy = () => w.kube.get(res('ippolicies'), w.ns, `${release}-corp`);
      expect((await policy()).metadata.finalizers).toEqual([FINALIZER]);
      await w.kube.delete(PODS, w.ns, `${release}-operator`);
      expect(await running).toEqual({
        handled: { IPPolicy: 1 },
        left: [],
        accounts: [`EdgeAccount ${w.ns}/${release}-team`],
      });
      expect((await policy()).metadata.finalizers ?? []).toEqual([]);
      expect((await w.kube.get(EA, w.ns, `${release}-team`)).metadata.finalizers ?? []).toEqual([]);
      // and no more: not another Deployment, not the Deployment itself, not pods elsewhere,
      // not deleting objects
      await apply(w.kube, [{ ...deploy, metadata: { ...deploy.metadata, name: `${release}-other` } }], w.ns);
      const status = (p: Promise<unknown>) =>
        p.then(
          () => 200,
          (e: KubeError) => e.status,
        );
      expect(
        await status(
          asHook.patch(DEPLOYMENTS, w.ns, `${release}-other`, { spec: { replicas: 0 } }, 'merge', 'scale'),
        ),
      ).toBe(403);
      expect(await status(asHook.get(DEPLOYMENTS, w.ns, name))).toBe(403);
      expect(await status(asHook.patch(DEPLOYMENTS, w.ns, name, { spec: { replicas: 1 } }))).toBe(403);
      expect(await status(asHook.list(PODS, 'default'))).toBe(403);
      expect(await status(asHook.delete(res('ippolicies'), w.ns, `${release}-corp`))).toBe(403);
    } finally {
      for (const o of cluster)
        await w.kube
          .delete(
            {
              group: 'rbac.authorization.k8s.io',
              version: 'v1',
              plural: o.kind === 'ClusterRole' ? 'clusterroles' : 'clusterrolebindings',
            },
            undefined,
            o.metadata.name,
          )
          .catch(() => {});
    }
  });

  it("the kustomize base's Secret guard still holds when an overlay moves the operator to another namespace", async () => {
    const moved = `${w.ns}-moved`;
    const dir = mkdtempSync(join(tmpdir(), 'overlay-'));
    const guard = `${w.ns}-guard`;
    const SECRETS = { group: '', version: 'v1', plural: 'secrets' };
    const rbac = (plural: string) => ({ group: 'rbac.authorization.k8s.io', version: 'v1', plural });
    const vap = (plural: string) => ({ group: 'admissionregistration.k8s.io', version: 'v1', plural });
    try {
      writeFileSync(
        join(dir, 'kustomization.yaml'),
        `namespace: ${moved}\nresources:\n  - ${relative(dir, join(REPO_ROOT, 'deploy/base'))}\n`,
      );
      const objs = docs(execFileSync(bin('kustomize'), ['build', dir], { encoding: 'utf8' }));
      const sa = objs.find((o) => o.kind === 'ServiceAccount')!;
      expect(sa.metadata.namespace).toBe(moved);
      // the overlay's Secret guard (policy and binding), under a name of this test's own,
      // against the real API server
      const policies = objs
        .filter(
          (o) =>
            o.kind?.startsWith('ValidatingAdmissionPolicy') && o.metadata.name === 'edge-operator-secrets',
        )
        .map((o) => ({
          ...o,
          metadata: { ...o.metadata, name: guard },
          ...(o.kind === 'ValidatingAdmissionPolicyBinding'
            ? { spec: { ...(o as unknown as { spec: object }).spec, policyName: guard } }
            : {}),
        })) as KubeObject[];
      expect(policies.map((o) => o.kind)).toEqual([
        'ValidatingAdmissionPolicy',
        'ValidatingAdmissionPolicyBinding',
      ]);
      await apply(w.kube, policies, w.ns);
      // the moved ServiceAccount may patch Secrets here (RBAC), so what refuses is the guard
      const user = `system:serviceaccount:${moved}:${sa.metadata.name}`;
      await w.kube.create(rbac('roles'), w.ns, {
        metadata: { name: guard },
        rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'patch'] }],
      });
      await w.kube.create(rbac('rolebindings'), w.ns, {
        metadata: { name: guard },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: guard },
        subjects: [{ kind: 'ServiceAccount', name: sa.metadata.name, namespace: moved }],
      });
      await w.kube.create(SECRETS, w.ns, { metadata: { name: guard }, stringData: { key: 'v' } });
      const asOperator = impersonating(user);
      // a policy takes effect once the API server has loaded it: a few seconds
      let refused: KubeError | undefined;
      let last = 'v';
      for (let i = 0; !refused; i++) {
        if (i === 100) throw new Error('the guard never refused the moved operator changing a Secret');
        if (i) await new Promise((r) => setTimeout(r, 200));
        refused = await asOperator.patch(SECRETS, w.ns, guard, { stringData: { key: `changed-${i}` } }).then(
          () => {
            last = `changed-${i}`;
            return undefined;
          },
          (e: KubeError) => e,
        );
      }
      expect(refused.message).toContain('the edge operator may change only its finalizer on a Secret');
      const data = ((await w.kube.get(SECRETS, w.ns, guard)) as unknown as { data: Record<string, string> })
        .data;
      expect(Buffer.from(data.key!, 'base64').toString()).toBe(last);
      // its own finalizer it may still set and remove, and no other
      await asOperator.patch(SECRETS, w.ns, guard, { metadata: { finalizers: [KEY_FINALIZER] } });
      await asOperator.patch(SECRETS, w.ns, guard, { metadata: { finalizers: null } });
      const other = await asOperator
        .patch(SECRETS, w.ns, guard, { metadata: { finalizers: [FINALIZER] } })
        .then(
          () => 'set',
          (e: KubeError) => e.message,
        );
      expect(other).toContain('may not add or remove another');
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await w.kube.delete(vap('validatingadmissionpolicybindings'), undefined, guard).catch(() => {});
      await w.kube.delete(vap('validatingadmissionpolicies'), undefined, guard).catch(() => {});
    }
  });

  it('helm template and kustomize output are accepted by the API server (server-side dry run)', async () => {
    await w.kube
      .create(NAMESPACES, undefined, { metadata: { name: 'edge-system' } })
      .catch((e: KubeError) => {
        if (e.status !== 409) throw e;
      });
    const first = template(
      'api.url=https://api.example.com',
      'api.key=k',
      'podDisruptionBudget.enabled=true',
      'replicaCount=2',
    );
    expect(networkPolicies(first)).toHaveLength(1);
    await dryRun(w.kube, first, 'edge-system');
    await dryRun(w.kube, template('watchNamespaces={default}'), 'edge-system');
    // the NetworkPolicy with every value set is accepted too
    await dryRun(
      w.kube,
      template(
        'networkPolicy.metrics.namespaces={monitoring,observability}',
        'networkPolicy.metrics.podSelector.matchLabels.app=prometheus',
        'networkPolicy.metrics.extraFrom[0].podSelector.matchLabels.app=debug',
        'networkPolicy.extraIngress[0].from[0].ipBlock.cidr=10.0.0.0/24',
        'networkPolicy.extraIngress[0].ports[0].port=8080',
        'networkPolicy.egress.enabled=true',
        'networkPolicy.egress.rules[0].to[0].ipBlock.cidr=203.0.113.0/24',
        'networkPolicy.egress.rules[0].ports[0].port=443',
      ).filter((o) => o.kind === 'NetworkPolicy'),
      'edge-system',
    );
    // the values a platform team sets in its first weeks
    const day2 = docs(
      execFileSync(
        bin('helm'),
        [
          'template',
          'eo',
          CHART,
          '--namespace',
          'edge-system',
          '--set',
          'api.url=https://api.example.com',
          '--set',
          'fullnameOverride=edge-day2',
          '--set',
          'serviceAccount.annotations.iam=role',
          '--set-json',
          'extraEnv=[{"name":"HTTPS_PROXY","value":"http://proxy:3128"},{"name":"NODE_EXTRA_CA_CERTS","value":"/etc/corp-ca/ca.crt"}]',
          '--set-json',
          'extraVolumes=[{"name":"corp-ca","configMap":{"name":"corp-ca"}}]',
          '--set-json',
          'extraVolumeMounts=[{"name":"corp-ca","mountPath":"/etc/corp-ca","readOnly":true}]',
          '--set',
          'podLabels.team=net',
          '--set',
          'terminationGracePeriodSeconds=60',
          '--set-json',
          'topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"ScheduleAnyway","labelSelector":{"matchLabels":{"app.kubernetes.io/name":"edge-operator"}}}]',
          '--set',
          'podDisruptionBudget.enabled=true',
          '--set',
          'drainPolicy=Retain',
        ],
        { encoding: 'utf8' },
      ),
    );
    const pdb = day2.find((o) => o.kind === 'PodDisruptionBudget')!;
    expect((pdb as unknown as { spec: object }).spec).toMatchObject({ maxUnavailable: 1 });
    expect(
      day2.find((o) => o.kind === 'ServiceAccount' && o.metadata.name === 'edge-day2')?.metadata.annotations,
    ).toEqual({ iam: 'role' });
    // the uninstall step: a pre-delete Job running edgectl drain (tested itself in drain.test.ts);
    // Retain stops nothing and needs no Role
    const job = day2.find((o) => o.kind === 'Job') as unknown as {
      metadata: { annotations: Record<string, string> };
      spec: { template: { spec: { containers: { args: string[] }[] } } };
    };
    expect(job.metadata.annotations['helm.sh/hook']).toBe('pre-delete');
    expect(job.spec.template.spec.containers[0]!.args).toEqual([
      'drain',
      '--policy',
      'Retain',
      '--stop-deployment',
      'edge-system/edge-day2',
      '--timeout',
      '300',
    ]);
    expect(day2.some((o) => o.kind === 'Role' && o.metadata.name === 'edge-day2-drain')).toBe(true);
    await dryRun(w.kube, day2, 'edge-system');
    // a value the schema does not know is refused at once, naming it
    expect(() => helmTemplate(['api.url=https://api.example.com', 'extraEnvs[0].name=X'])).toThrow(
      /extraEnvs/,
    );
    for (const dir of ['deploy/crds', 'deploy', 'deploy/overlays/example']) {
      const objs = docs(
        execFileSync(bin('kustomize'), ['build', join(REPO_ROOT, dir)], { encoding: 'utf8' }),
      );
      // the CRDs and the operator are apart: deleting one never deletes the other
      expect(objs.some((o) => o.kind === 'Deployment')).toBe(dir !== 'deploy/crds');
      expect(objs.some((o) => o.kind === 'CustomResourceDefinition')).toBe(dir === 'deploy/crds');
      expect(objs.some((o) => o.kind === 'NetworkPolicy')).toBe(dir !== 'deploy/crds');
      await dryRun(w.kube, objs, 'edge-system');
    }
  });

  it('the pod passes the restricted Pod Security Standard (enforced by the API server)', async () => {
    const ns = `${w.ns}-restricted`;
    await w.kube.create(NAMESPACES, undefined, {
      metadata: { name: ns, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
    });
    const deploy = template('api.existingSecret=x').find((o) => o.kind === 'Deployment') as unknown as {
      spec: { template: { spec: Record<string, unknown> } };
    };
    const pod = (spec: Record<string, unknown>) =>
      ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'probe', namespace: ns },
        spec,
      }) as unknown as KubeObject;
    await apply(w.kube, [pod(deploy.spec.template.spec)], ns, { dryRun: true });
    // and the admission really enforces: the same pod without its securityContext is refused
    const loose = structuredClone(deploy.spec.template.spec) as {
      securityContext?: unknown;
      containers: { securityContext?: unknown }[];
    };
    delete loose.securityContext;
    delete loose.containers[0]!.securityContext;
    const err = (await apply(w.kube, [pod(loose)], ns, { dryRun: true }).catch((e) => e)) as KubeError;
    expect(err).toBeInstanceOf(KubeError);
    expect(err.message).toMatch(/violates PodSecurity "restricted/);
    await w.kube.delete(NAMESPACES, undefined, ns).catch(() => {});
  });

  it('helm install -> CRD change -> helm upgrade -> helm uninstall with objects present: CRDs upgraded, kept, objects untouched', async () => {
    // a control plane of its own: the suite's CRDs were not installed by Helm
    const dir = join(REPO_ROOT, '.cache', 'helm-crd-cluster');
    const cp = await clusterUp({ dir, log: () => {} });
    const chart2 = mkdtempSync(join(tmpdir(), 'edge-chart-'));
    try {
      const h = (...args: string[]) =>
        execFileSync(bin('helm'), [...args, '--kubeconfig', cp.kubeconfig], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
        });
      const kube = new Kube(kubeconfigTarget(cp.kubeconfig));
      const CRD = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' };
      // no kubelet here to run the drain Job, which helm uninstall would wait for (test/node runs it)
      const url = ['--set', 'api.url=https://api.example.com', '--set', 'drainPolicy=None'];
      h('install', 'eo', CHART, '-n', 'edge-system', '--create-namespace', ...url);
      await waitFor('CRD established', async () => {
        const c = (await kube.get(CRD, undefined, 'ippolicies.edge.tunnel.dev')) as unknown as {
          status?: { conditions?: { type: string; status: string }[] };
        };
        return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
      });
      await kube.create(res('ippolicies'), 'default', {
        apiVersion: 'edge.tunnel.dev/v1alpha1',
        kind: 'IPPolicy',
        metadata: { name: 'kept', namespace: 'default' },
        spec: { description: 'survives the uninstall' },
      });
      // the next chart version changes a CRD
      cpSync(CHART, chart2, { recursive: true });
      const f = join(chart2, 'files/crds/ippolicies.edge.tunnel.dev.yaml');
      writeFileSync(
        f,
        readFileSync(f, 'utf8').replace('desired state of the remote resource', 'desired state (v2)'),
      );
      h('upgrade', 'eo', chart2, '-n', 'edge-system', ...url);
      expect(JSON.stringify(await kube.get(CRD, undefined, 'ippolicies.edge.tunnel.dev'))).toContain(
        'desired state (v2)',
      );
      h('uninstall', 'eo', '-n', 'edge-system');
      expect(h('list', '-n', 'edge-system')).not.toContain('eo');
      await expect(kube.get(CRD, undefined, 'ippolicies.edge.tunnel.dev')).resolves.toBeTruthy();
      await expect(kube.get(res('ippolicies'), 'default', 'kept')).resolves.toBeTruthy();
    } finally {
      rmSync(chart2, { recursive: true, force: true });
      await clusterDown({ dir, log: () => {} });
    }
  });

  it('helm install creates the objects and helm uninstall removes them', async () => {
    const ns = `${w.ns}-helm`;
    helm(
      'install',
      'eo',
      CHART,
      '-n',
      ns,
      '--create-namespace',
      '--set',
      'api.key=secret-value',
      '--set',
      'api.url=https://api.example.com',
      // this cluster's CRDs were applied without Helm: Helm would refuse to take them over
      '--set',
      'crds.install=false',
      // no kubelet here to run the drain Job, which helm uninstall would wait for (test/node runs it)
      '--set',
      'drainPolicy=None',
    );
    const sa = { group: '', version: 'v1', plural: 'serviceaccounts' };
    const deployments = { group: 'apps', version: 'v1', plural: 'deployments' };
    const crb = { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterrolebindings' };
    await expect(w.kube.get(deployments, ns, 'eo-edge-operator')).resolves.toBeTruthy();
    await expect(w.kube.get(sa, ns, 'eo-edge-operator')).resolves.toBeTruthy();
    await expect(w.kube.get(crb, undefined, 'eo-edge-operator')).resolves.toBeTruthy();
    expect(helm('status', 'eo', '-n', ns)).toContain('STATUS: deployed');
    helm('uninstall', 'eo', '-n', ns);
    await waitFor('objects removed', async () => {
      const gone = await Promise.all([
        w.kube.get(deployments, ns, 'eo-edge-operator').then(
          () => false,
          (e: KubeError) => e.status === 404,
        ),
        w.kube.get(crb, undefined, 'eo-edge-operator').then(
          () => false,
          (e: KubeError) => e.status === 404,
        ),
      ]);
      return gone.every(Boolean);
    });
    // CRDs stay: deleting them would delete every user's objects
    await expect(
      w.kube.get(
        { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' },
        undefined,
        'ippolicies.edge.tunnel.dev',
      ),
    ).resolves.toBeTruthy();
  });
});
