// The chart's admission guards (ValidatingAdmissionPolicies), rendered by helm and their CEL
// evaluated on sample requests: what the operator's ServiceAccount may do to Secrets
// (secret-guard.yaml) and to its RoleBindings (rbac.yaml, with watchNamespaces), and who may
// set the label edge.tunnel.dev/instance on the group's objects (secret-guard.yaml).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { evaluate } from '@marcbachmann/cel-js';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { cacheDir, REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { DIGEST_KEY_SECRET } from '../../src/operator/runtime/kube/digest-key.ts';
import { ACCESS_FINALIZER, KEY_FINALIZER } from '../../src/operator/runtime/kube/holds.ts';
import { renderBase } from '../packaging/render-base.ts';

const HELM = process.env.HELM ?? join(cacheDir(), 'bin', 'helm');
const skipReason = existsSync(HELM)
  ? undefined
  : `no helm at ${HELM} (set HELM, or run test/controlplane/build.sh)`;
const CHART = join(REPO_ROOT, 'helm/edge-operator');
/** The test control plane's (test/controlplane/kube). */
const KUBE_VERSION = '1.35.0';
const NS = 'edge-system';
/** The operator's ServiceAccount as the API server names it (release eo: eo-edge-operator). */
const OPERATOR = `system:serviceaccount:${NS}:eo-edge-operator`;
const TENANT = 'system:serviceaccount:team-a:deployer';

type Json = Record<string, unknown>;
interface Rule {
  apiGroups: string[];
  apiVersions: string[];
  operations: string[];
  resources: string[];
}
interface Policy {
  kind: string;
  metadata: { name: string };
  spec: {
    failurePolicy?: string;
    policyName?: string;
    validationActions?: string[];
    matchResources?: Json;
    matchConstraints: { resourceRules: Rule[] };
    matchConditions?: { name: string; expression: string }[];
    variables?: { name: string; expression: string }[];
    validations: { expression: string; message: string }[];
  };
}

function render(...set: string[]): Policy[] {
  const out = execFileSync(
    HELM,
    [
      'template',
      'eo',
      CHART,
      '--namespace',
      NS,
      // the chart's kubeVersion is checked against it (without it: the version helm was built with)
      '--kube-version',
      KUBE_VERSION,
      ...['api.url=https://api.example.com', ...set].flatMap((s) => ['--set', s]),
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return parseAllDocuments(out)
    .map((d) => d.toJS() as Policy)
    .filter(Boolean);
}

const named = (objs: Policy[], kind: string, name: string) =>
  objs.find((o) => o.kind === kind && o.metadata.name === name);

interface Request {
  operation: 'CREATE' | 'UPDATE' | 'DELETE';
  user: string;
  group: string;
  resource: string;
  namespace?: string;
  object: Json | null;
  oldObject: Json | null;
}

/**
 * What the API server would answer with this policy alone: 'not matched' (the request is not
 * the policy's), or the messages of the validations that refuse it ([]: admitted). Variables
 * are evaluated lazily, as the API server does.
 */
function admission(p: Policy, r: Request): 'not matched' | string[] {
  const covers = (list: string[], v: string) => list.includes('*') || list.includes(v);
  const matched = p.spec.matchConstraints.resourceRules.some(
    (x) =>
      covers(x.apiGroups, r.group) && covers(x.resources, r.resource) && covers(x.operations, r.operation),
  );
  const request = {
    operation: r.operation,
    namespace: r.namespace ?? '',
    userInfo: { username: r.user },
  };
  const variables: Json = {};
  const ctx = () => ({ request, object: r.object, oldObject: r.oldObject, variables });
  for (const v of p.spec.variables ?? [])
    Object.defineProperty(variables, v.name, {
      enumerable: true,
      get: () => evaluate(v.expression, ctx()),
    });
  if (!matched || !(p.spec.matchConditions ?? []).every((c) => evaluate(c.expression, ctx()) === true))
    return 'not matched';
  return p.spec.validations.filter((v) => evaluate(v.expression, ctx()) !== true).map((v) => v.message);
}

const secret = (
  o: { finalizers?: string[]; labels?: Json; data?: Json; type?: string; extra?: Json } = {},
) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: {
    name: 'edge-key',
    namespace: 'team-a',
    ...(o.finalizers && { finalizers: o.finalizers }),
    ...(o.labels && { labels: o.labels }),
    ...((o.extra?.metadata as Json) ?? {}),
  },
  type: o.type ?? 'Opaque',
  data: o.data ?? { 'api-key': 'c2VjcmV0' },
  ...Object.fromEntries(Object.entries(o.extra ?? {}).filter(([k]) => k !== 'metadata')),
});

describe.skipIf(!!skipReason)('chart: the Secret guard', () => {
  const objs = skipReason ? [] : render();
  const policy = named(objs, 'ValidatingAdmissionPolicy', 'eo-edge-operator-secrets')!;
  const update = (oldObject: Json, object: Json, user = OPERATOR) =>
    admission(policy, {
      operation: 'UPDATE',
      user,
      group: '',
      resource: 'secrets',
      namespace: 'team-a',
      object,
      oldObject,
    });
  const create = (namespace: string, object: Json, user = OPERATOR) =>
    admission(policy, {
      operation: 'CREATE',
      user,
      group: '',
      resource: 'secrets',
      namespace,
      object,
      oldObject: null,
    });
  const ONLY = 'the edge operator may change only its finalizer on a Secret';

  it('is bound, denies, and covers the operator creating, updating and deleting Secrets', () => {
    expect(policy.spec.failurePolicy).toBe('Fail');
    expect(policy.spec.matchConstraints.resourceRules).toEqual([
      {
        apiGroups: [''],
        apiVersions: ['v1'],
        operations: ['CREATE', 'UPDATE', 'DELETE'],
        resources: ['secrets'],
      },
    ]);
    expect(policy.spec.matchConditions).toEqual([
      { name: 'the-operator', expression: `request.userInfo.username == "${OPERATOR}"` },
    ]);
    const binding = named(objs, 'ValidatingAdmissionPolicyBinding', 'eo-edge-operator-secrets')!;
    expect(binding.spec).toEqual({ policyName: 'eo-edge-operator-secrets', validationActions: ['Deny'] });
    expect(policy.spec.validations.map((v) => v.expression)).toEqual(
      expect.arrayContaining([
        expect.stringContaining(`object.metadata.name == '${DIGEST_KEY_SECRET}'`),
        "request.operation != 'DELETE'",
        expect.stringContaining(`.filter(f, f != '${KEY_FINALIZER}')`),
      ]),
    );
  });

  it('the operator may add or remove its finalizer, beside others it leaves as they are', () => {
    expect(update(secret(), secret({ finalizers: [KEY_FINALIZER] }))).toEqual([]);
    expect(
      update(secret({ finalizers: ['x.io/keep'] }), secret({ finalizers: ['x.io/keep', KEY_FINALIZER] })),
    ).toEqual([]);
    expect(update(secret({ finalizers: [KEY_FINALIZER] }), secret({ finalizers: [] }))).toEqual([]);
    expect(update(secret({ finalizers: [KEY_FINALIZER] }), secret())).toEqual([]);
    expect(
      update(secret({ finalizers: ['x.io/keep', KEY_FINALIZER] }), secret({ finalizers: ['x.io/keep'] })),
    ).toEqual([]);
  });

  it('the operator may not add, remove or swap another finalizer', () => {
    for (const [before, after] of [
      [[], ['x.io/other']],
      [['x.io/keep'], []],
      [['x.io/keep'], [KEY_FINALIZER]],
      [
        ['x.io/keep', KEY_FINALIZER],
        ['x.io/other', KEY_FINALIZER],
      ],
      [[KEY_FINALIZER], [KEY_FINALIZER, 'x.io/other']],
    ]) {
      const refused = update(secret({ finalizers: before }), secret({ finalizers: after }));
      expect(refused, `${before} -> ${after}`).toHaveLength(1);
      expect(refused[0]).toMatch(
        /^the edge operator may change only its finalizer on a Secret \(edge\.tunnel\.dev\/key-in-use\)/,
      );
    }
  });

  it('the operator may change nothing else: data, type, labels, annotations, owners, immutability', () => {
    const before = secret({ finalizers: [KEY_FINALIZER], labels: { team: 'a' } });
    for (const after of [
      secret({ finalizers: [KEY_FINALIZER], labels: { team: 'a' }, data: { 'api-key': 'c3RvbGVu' } }),
      secret({ finalizers: [KEY_FINALIZER], labels: { team: 'a' }, type: 'kubernetes.io/tls' }),
      secret({ finalizers: [KEY_FINALIZER], labels: { team: 'other' } }),
      secret({ finalizers: [KEY_FINALIZER] }),
      secret({
        finalizers: [KEY_FINALIZER],
        labels: { team: 'a' },
        extra: { metadata: { annotations: { a: 'b' } } },
      }),
      secret({
        finalizers: [KEY_FINALIZER],
        labels: { team: 'a' },
        extra: {
          metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: '0' }] },
        },
      }),
      secret({ finalizers: [KEY_FINALIZER], labels: { team: 'a' }, extra: { immutable: true } }),
    ])
      expect(update(before, after), JSON.stringify(after)).toEqual([ONLY]);
    // its finalizer and a change of data at once: refused too
    expect(update(secret(), secret({ finalizers: [KEY_FINALIZER], data: { x: 'eA==' } }))).toEqual([ONLY]);
  });

  it('the operator may create its digest key Secret in its own namespace, and no other Secret', () => {
    const key = (o: Json = {}) => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: DIGEST_KEY_SECRET, namespace: NS },
      type: 'Opaque',
      data: { key: 'eA==' },
      ...o,
    });
    expect(create(NS, key())).toEqual([]);
    const refusal = [
      'the edge operator may create only its digest key Secret edge-operator-digest-key (type Opaque) in its own namespace',
    ];
    expect(create('team-a', key({ metadata: { name: DIGEST_KEY_SECRET, namespace: 'team-a' } }))).toEqual(
      refusal,
    );
    expect(create(NS, key({ metadata: { name: 'other', namespace: NS } }))).toEqual(refusal);
    expect(create('team-a', secret())).toEqual(refusal);
    // a token Secret would mint a token of another ServiceAccount of the namespace
    expect(
      create(
        NS,
        key({
          type: 'kubernetes.io/service-account-token',
          metadata: {
            name: DIGEST_KEY_SECRET,
            namespace: NS,
            annotations: { 'kubernetes.io/service-account.name': 'default' },
          },
        }),
      ),
    ).toEqual(refusal);
  });

  it('the operator deletes no Secret', () => {
    expect(
      admission(policy, {
        operation: 'DELETE',
        user: OPERATOR,
        group: '',
        resource: 'secrets',
        namespace: 'team-a',
        object: null,
        oldObject: secret({ finalizers: [KEY_FINALIZER] }),
      }),
    ).toEqual(['the edge operator deletes no Secret']);
  });

  it('everyone else is not its business', () => {
    expect(update(secret(), secret({ data: { x: 'eA==' }, finalizers: ['x.io/y'] }), TENANT)).toBe(
      'not matched',
    );
    expect(create('team-a', secret(), TENANT)).toBe('not matched');
  });

  it("deploy/base's policies take the operator's ServiceAccount in any namespace (a kustomize overlay moves it)", () => {
    const base = parseAllDocuments(renderBase())
      .map((d) => d.toJS() as Policy)
      .filter(Boolean);
    const condition = (name: string) =>
      named(base, 'ValidatingAdmissionPolicy', name)!.spec.matchConditions!.map((c) => c.expression);
    expect(renderBase()).not.toContain('system:serviceaccount:edge-system:');
    const is = (expr: string, user: string) => evaluate(expr, { request: { userInfo: { username: user } } });
    const [secrets] = condition('edge-operator-secrets');
    const [label] = condition('edge-operator-instance-label');
    for (const ns of ['edge-system', 'moved']) {
      expect(is(secrets!, `system:serviceaccount:${ns}:edge-operator`)).toBe(true);
      expect(is(label!, `system:serviceaccount:${ns}:edge-operator`)).toBe(false);
    }
    for (const user of [TENANT, 'system:serviceaccount:edge-system:edge-operator-x', 'edge-operator']) {
      expect(is(secrets!, user)).toBe(false);
      expect(is(label!, user)).toBe(true);
    }
  });
});

describe.skipIf(!!skipReason)("chart: the guard of the operator's RoleBindings (watchNamespaces)", () => {
  const objs = skipReason ? [] : render('watchNamespaces={a,b}');
  const policy = named(objs, 'ValidatingAdmissionPolicy', 'eo-edge-operator-rolebindings')!;
  const binding = (o: { finalizers?: string[]; subjects?: Json[]; roleRef?: Json; labels?: Json } = {}) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: {
      name: 'eo-edge-operator',
      namespace: 'a',
      labels: o.labels ?? { 'app.kubernetes.io/instance': 'eo' },
      ...(o.finalizers && { finalizers: o.finalizers }),
    },
    roleRef: o.roleRef ?? {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'eo-edge-operator',
    },
    subjects: o.subjects ?? [{ kind: 'ServiceAccount', name: 'eo-edge-operator', namespace: NS }],
  });
  const update = (oldObject: Json, object: Json, user = OPERATOR) =>
    admission(policy, {
      operation: 'UPDATE',
      user,
      group: 'rbac.authorization.k8s.io',
      resource: 'rolebindings',
      namespace: 'a',
      object,
      oldObject,
    });
  const SUBJECTS = 'the edge operator may not change the subjects or roleRef of a RoleBinding';
  const ONLY =
    'the edge operator may change only its finalizer (edge.tunnel.dev/operator-access) on a RoleBinding';

  it('is there with watchNamespaces only (without, the operator has no right on RoleBindings)', () => {
    expect(policy).toBeDefined();
    expect(named(objs, 'ValidatingAdmissionPolicyBinding', 'eo-edge-operator-rolebindings')?.spec).toEqual({
      policyName: 'eo-edge-operator-rolebindings',
      validationActions: ['Deny'],
    });
    expect(policy.spec.matchConditions).toEqual([
      { name: 'the-operator', expression: `request.userInfo.username == "${OPERATOR}"` },
    ]);
    const none = render();
    expect(none.filter((o) => o.metadata.name === 'eo-edge-operator-rolebindings')).toEqual([]);
  });

  it('the operator may add or remove its finalizer', () => {
    expect(update(binding(), binding({ finalizers: [ACCESS_FINALIZER] }))).toEqual([]);
    expect(update(binding({ finalizers: [ACCESS_FINALIZER] }), binding())).toEqual([]);
    expect(
      update(binding({ finalizers: ['x.io/k'] }), binding({ finalizers: ['x.io/k', ACCESS_FINALIZER] })),
    ).toEqual([]);
  });

  it('the operator may not change the subjects or the roleRef', () => {
    const more = [
      { kind: 'ServiceAccount', name: 'eo-edge-operator', namespace: NS },
      { kind: 'ServiceAccount', name: 'deployer', namespace: 'a' },
    ];
    expect(update(binding(), binding({ subjects: more }))).toEqual([SUBJECTS]);
    expect(update(binding(), binding({ subjects: more, finalizers: [ACCESS_FINALIZER] }))).toEqual([
      SUBJECTS,
    ]);
    expect(
      update(binding(), binding({ subjects: [{ kind: 'Group', name: 'system:authenticated' }] })),
    ).toEqual([SUBJECTS]);
    expect(
      update(
        binding(),
        binding({ roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' } }),
      ),
    ).toEqual([SUBJECTS]);
  });

  it('the operator may not change labels or another finalizer', () => {
    expect(update(binding(), binding({ labels: { x: 'y' } }))).toEqual([ONLY]);
    expect(update(binding({ finalizers: ['x.io/k'] }), binding())).toEqual([ONLY]);
    expect(update(binding(), binding({ finalizers: [ACCESS_FINALIZER, 'x.io/k'] }))).toEqual([ONLY]);
  });

  it('the operator creates and deletes no RoleBinding; others are not its business', () => {
    for (const operation of ['CREATE', 'DELETE'] as const)
      expect(
        admission(policy, {
          operation,
          user: OPERATOR,
          group: 'rbac.authorization.k8s.io',
          resource: 'rolebindings',
          namespace: 'a',
          object: operation === 'CREATE' ? binding() : null,
          oldObject: operation === 'DELETE' ? binding() : null,
        }),
      ).toEqual(['the edge operator creates and deletes no RoleBinding']);
    expect(update(binding(), binding({ subjects: [] }), TENANT)).toBe('not matched');
  });
});

describe.skipIf(!!skipReason)('chart: the guard of the label edge.tunnel.dev/instance', () => {
  const NAME = 'eo-edge-operator-instance-label';
  const LABEL = 'edge.tunnel.dev/instance';
  const edge = (label?: string, spec: Json = { description: 'x' }) => ({
    apiVersion: 'edge.tunnel.dev/v1alpha1',
    kind: 'HTTPSEdge',
    metadata: {
      name: 'web',
      namespace: 'team-a',
      labels: { app: 'web', ...(label !== undefined && { [LABEL]: label }) },
    },
    spec,
  });
  const request = (
    p: Policy,
    operation: 'CREATE' | 'UPDATE',
    object: Json,
    oldObject: Json | null,
    user = TENANT,
  ) =>
    admission(p, {
      operation,
      user,
      group: 'edge.tunnel.dev',
      resource: 'httpsedges',
      namespace: 'team-a',
      object,
      oldObject,
    });
  const CHANGED =
    'the label edge.tunnel.dev/instance cannot be added, changed or removed: it says which installation of the edge operator manages the object (delete the object and create it again to move it)';

  it('is on by default, over every kind of the group, on create and update, by anyone but the operator', () => {
    const objs = render();
    const p = named(objs, 'ValidatingAdmissionPolicy', NAME)!;
    expect(p.spec.failurePolicy).toBe('Fail');
    expect(p.spec.matchConstraints.resourceRules).toEqual([
      {
        apiGroups: ['edge.tunnel.dev'],
        apiVersions: ['*'],
        operations: ['CREATE', 'UPDATE'],
        resources: ['*'],
      },
    ]);
    expect(p.spec.matchConditions).toEqual([
      { name: 'not-the-operator', expression: `request.userInfo.username != "${OPERATOR}"` },
    ]);
    expect(p.spec.validations.map((v) => v.expression)).toEqual([
      "request.operation != 'UPDATE' || variables.now == variables.before",
      "request.operation != 'CREATE' || variables.now.all(v, v in [])",
    ]);
    expect(named(objs, 'ValidatingAdmissionPolicyBinding', NAME)?.spec).toEqual({
      policyName: NAME,
      validationActions: ['Deny'],
    });
  });

  it('instanceLabelGuard.enabled=false leaves it out', () => {
    expect(render('instanceLabelGuard.enabled=false').filter((o) => o.metadata.name === NAME)).toEqual([]);
  });

  it('on update the label may not be added, changed or removed; other changes pass', () => {
    const p = named(render(), 'ValidatingAdmissionPolicy', NAME)!;
    expect(request(p, 'UPDATE', edge(undefined, { description: 'y' }), edge())).toEqual([]);
    expect(request(p, 'UPDATE', edge('b', { description: 'y' }), edge('b'))).toEqual([]);
    for (const [before, after] of [
      [undefined, 'b'],
      ['b', 'c'],
      ['b', undefined],
      ['b', ''],
    ])
      expect(request(p, 'UPDATE', edge(after), edge(before)), `${before} -> ${after}`).toEqual([CHANGED]);
    // a resource without any label
    const bare = { ...edge(), metadata: { name: 'web', namespace: 'team-a' } };
    expect(request(p, 'UPDATE', bare, bare)).toEqual([]);
    expect(request(p, 'UPDATE', edge('b'), bare)).toEqual([CHANGED]);
    // the operator is not held to it (it never changes the label)
    expect(request(p, 'UPDATE', edge('b'), edge(), OPERATOR)).toBe('not matched');
  });

  it("on create the label is absent or this installation's (or another listed one's)", () => {
    const plain = named(render(), 'ValidatingAdmissionPolicy', NAME)!;
    expect(request(plain, 'CREATE', edge(), null)).toEqual([]);
    expect(request(plain, 'CREATE', edge('b'), null)).toEqual([
      'the label edge.tunnel.dev/instance of a new object must be absent (the installations in this cluster: instance and instanceLabelGuard.otherInstances of the chart)',
    ]);
    const b = named(render('instance=b'), 'ValidatingAdmissionPolicy', NAME)!;
    expect(request(b, 'CREATE', edge('b'), null)).toEqual([]);
    expect(request(b, 'CREATE', edge(), null)).toEqual([]);
    expect(request(b, 'CREATE', edge('c'), null)).toHaveLength(1);
    const others = named(
      render('instance=b', 'instanceLabelGuard.otherInstances={c,d}'),
      'ValidatingAdmissionPolicy',
      NAME,
    )!;
    expect(others.spec.validations[1]!.expression).toBe(
      `request.operation != 'CREATE' || variables.now.all(v, v in ["b","c","d"])`,
    );
    for (const v of ['b', 'c', 'd']) expect(request(others, 'CREATE', edge(v), null), v).toEqual([]);
    expect(request(others, 'CREATE', edge('e'), null)).toEqual([
      'the label edge.tunnel.dev/instance of a new object must be absent or one of b, c, d (the installations in this cluster: instance and instanceLabelGuard.otherInstances of the chart)',
    ]);
  });

  it('with watchNamespaces its binding covers those namespaces', () => {
    expect(named(render('watchNamespaces={a,b}'), 'ValidatingAdmissionPolicyBinding', NAME)?.spec).toEqual({
      policyName: NAME,
      validationActions: ['Deny'],
      matchResources: {
        namespaceSelector: {
          matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['a', 'b'] }],
        },
      },
    });
  });

  it('values.schema.json holds instanceLabelGuard to its shape', () => {
    for (const bad of [
      'instanceLabelGuard.otherInstances={-x}',
      'instanceLabelGuard.enabled=maybe',
      'instanceLabelGuard.other=1',
    ])
      expect(() => render(bad), bad).toThrow(/values don't meet the specifications of the schema/);
  });
});
