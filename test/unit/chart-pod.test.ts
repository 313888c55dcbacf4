// The chart's pods: the security contexts as values (defaults: the restricted Pod Security
// Standard as user 65532; a platform that assigns the user unsets it), the replicas spread over
// nodes by default, and the Kubernetes version the chart declares (kubeVersion).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
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

interface PodSpec {
  securityContext?: Record<string, unknown>;
  containers: { name: string; securityContext?: Record<string, unknown> }[];
  topologySpreadConstraints?: Record<string, unknown>[];
}
interface K8sObject {
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  spec: { selector?: { matchLabels: Record<string, string> }; template: { spec: PodSpec } };
}

function helmTemplate(set: string[], kubeVersion = KUBE_VERSION): string {
  return execFileSync(
    HELM,
    [
      'template',
      'eo',
      CHART,
      '--namespace',
      'edge-system',
      '--kube-version',
      kubeVersion,
      ...['api.url=https://api.example.com', ...set].flatMap((s) => ['--set', s]),
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
}
const render = (...set: string[]): K8sObject[] =>
  parseAllDocuments(helmTemplate(set))
    .map((d) => d.toJS() as K8sObject)
    .filter(Boolean);
function refusal(set: string[], kubeVersion = KUBE_VERSION): string {
  try {
    helmTemplate(set, kubeVersion);
  } catch (e) {
    return String((e as { stderr?: string }).stderr);
  }
  throw new Error(`rendered with ${set.join(' ')} on ${kubeVersion}`);
}

const deployment = (objs: K8sObject[]) => objs.find((o) => o.kind === 'Deployment')!;
const podOf = (objs: K8sObject[]) => deployment(objs).spec.template.spec;
/** The pre-delete drain Job's pod. */
const drainPodOf = (objs: K8sObject[]) =>
  objs.find((o) => o.kind === 'Job' && o.metadata.annotations?.['helm.sh/hook'] === 'pre-delete')!.spec
    .template.spec;

/** What the chart hard-coded before these were values: the defaults must not change. */
const POD_DEFAULT = {
  runAsNonRoot: true,
  runAsUser: 65532,
  runAsGroup: 65532,
  seccompProfile: { type: 'RuntimeDefault' },
};
const CONTAINER_DEFAULT = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

describe.skipIf(!!skipReason)(`chart: pods${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  it('security contexts: the defaults are the restricted ones, as user 65532, for the operator and the drain Job', () => {
    const objs = render();
    for (const pod of [podOf(objs), drainPodOf(objs)]) {
      expect(pod.securityContext).toEqual(POD_DEFAULT);
      expect(pod.containers).toHaveLength(1);
      expect(pod.containers[0]!.securityContext).toEqual(CONTAINER_DEFAULT);
    }
  });

  it('security contexts: a platform that assigns the user (OpenShift restricted-v2) unsets runAsUser and runAsGroup', () => {
    const objs = render('podSecurityContext.runAsUser=null', 'podSecurityContext.runAsGroup=null');
    for (const pod of [podOf(objs), drainPodOf(objs)]) {
      expect(pod.securityContext).toEqual({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(pod.containers[0]!.securityContext).toEqual(CONTAINER_DEFAULT);
    }
  });

  it('security contexts: fields are added and replaced; empty ones are left out', () => {
    const pod = podOf(
      render(
        'podSecurityContext.fsGroup=1000700000',
        'securityContext.runAsUser=1000700000',
        'securityContext.seccompProfile=null',
      ),
    );
    expect(pod.securityContext).toEqual({ ...POD_DEFAULT, fsGroup: 1000700000 });
    const { seccompProfile: _, ...rest } = CONTAINER_DEFAULT;
    expect(pod.containers[0]!.securityContext).toEqual({ ...rest, runAsUser: 1000700000 });
    const bare = podOf(render('podSecurityContext=null', 'securityContext=null'));
    expect(bare.securityContext).toBeUndefined();
    expect(bare.containers[0]!.securityContext).toBeUndefined();
    expect(refusal(['podSecurityContext.runAsUser=-1'])).toContain('/podSecurityContext/runAsUser');
  });

  it('one replica: no topology spread', () => {
    expect(podOf(render()).topologySpreadConstraints).toBeUndefined();
  });

  it('several replicas: spread over nodes by default, preferred (ScheduleAnyway), selecting its own pods', () => {
    const objs = render('replicaCount=3');
    expect(podOf(objs).topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: { matchLabels: deployment(objs).spec.selector!.matchLabels },
      },
    ]);
    expect(deployment(objs).spec.selector!.matchLabels).toEqual({
      'app.kubernetes.io/name': 'edge-operator',
      'app.kubernetes.io/instance': 'eo',
    });
  });

  it('topologySpreadConstraints, when set, replace the default (with any number of replicas)', () => {
    const zone = {
      maxSkew: 1,
      topologyKey: 'topology.kubernetes.io/zone',
      whenUnsatisfiable: 'DoNotSchedule',
      labelSelector: { matchLabels: { 'app.kubernetes.io/instance': 'eo' } },
    };
    const set = [
      'topologySpreadConstraints[0].maxSkew=1',
      'topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone',
      'topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule',
      'topologySpreadConstraints[0].labelSelector.matchLabels.app\\.kubernetes\\.io/instance=eo',
    ];
    expect(podOf(render('replicaCount=2', ...set)).topologySpreadConstraints).toEqual([zone]);
    expect(podOf(render(...set)).topologySpreadConstraints).toEqual([zone]);
    // the schema wants what Kubernetes requires of each entry
    expect(refusal(['topologySpreadConstraints[0].maxSkew=1'])).toMatch(/topologyKey/);
    expect(
      refusal([
        'topologySpreadConstraints[0].maxSkew=1',
        'topologySpreadConstraints[0].topologyKey=kubernetes.io/hostname',
        'topologySpreadConstraints[0].whenUnsatisfiable=Sometimes',
      ]),
    ).toMatch(/whenUnsatisfiable/);
  });

  it('kubeVersion: 1.31 or newer, the minimum the README states (the CRDs use CEL of 1.31)', () => {
    const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as { kubeVersion?: string };
    expect(chart.kubeVersion).toBe('>=1.31.0-0');
    expect(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8')).toContain('Kubernetes 1.31 or newer');
    expect(refusal([], '1.30.9')).toContain('chart requires kubeVersion: >=1.31.0-0');
    // -0: pre-releases and providers' suffixes of 1.31 count as 1.31
    for (const v of ['1.31.0', 'v1.31.0-gke.1000', '1.36.1'])
      expect(helmTemplate([], v)).toContain('kind: Deployment');
  });
});
