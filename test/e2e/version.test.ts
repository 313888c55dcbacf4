// edgectl version against a real API server: the operator's version read from the Deployment the
// chart labels (its image's tag, else its version label), one read-only list; a caller who may
// not list Deployments is told so, exit 0.
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { REPO_ROOT } from '../../src/localcluster/paths.ts';
import { kubeconfig, skipReason, type World, world } from './harness.ts';

const DEPLOYMENTS = { group: 'apps', version: 'v1', plural: 'deployments' };
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };

async function edgectl(...args: string[]) {
  try {
    const r = await promisify(execFile)(process.execPath, [join(REPO_ROOT, 'src/cli/edgectl.ts'), ...args], {
      cwd: REPO_ROOT,
    });
    return { code: 0, out: r.stdout, err: r.stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, out: x.stdout, err: x.stderr };
  }
}

const deployment = (ns: string, image: string, version: string) => ({
  metadata: {
    name: 'edge-operator',
    namespace: ns,
    labels: { 'app.kubernetes.io/name': 'edge-operator', 'app.kubernetes.io/version': version },
  },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: 'eo' } },
    template: {
      metadata: { labels: { app: 'eo' } },
      spec: { containers: [{ name: 'operator', image }] },
    },
  },
});

describe.skipIf(!!skipReason)("edgectl version: the operator's version from its Deployment", () => {
  let w: World;
  beforeAll(async () => {
    w = await world('version');
    await w.kube.create(
      DEPLOYMENTS,
      w.ns,
      deployment(w.ns, 'ghcr.io/edge-operator/edge-operator:0.2.0', '0.1.0'),
    );
  });
  afterAll(async () => {
    await w?.close();
  });

  it("reads the image's tag of the Deployment labelled as the chart labels it", async () => {
    const r = await edgectl('version', '--kubeconfig', kubeconfig, '-n', w.ns);
    expect(r.code).toBe(0);
    expect(r.out.split('\n')).toEqual([
      `client: ${pkg.version} (node ${process.versions.node})`,
      `operator: 0.2.0 (${w.ns}/edge-operator, image ghcr.io/edge-operator/edge-operator:0.2.0, 0/2 ready)`,
      '',
    ]);
  });

  it('a caller who may not list Deployments is told so, exit 0', async () => {
    // the same cluster and credentials, impersonating a user with no rights (kubeconfig `as`)
    const kc = parse(readFileSync(kubeconfig, 'utf8')) as { users: { user: Record<string, unknown> }[] };
    for (const u of kc.users) u.user.as = 'nobody-at-all';
    // beside the original: the certificate files it names may be relative to it
    const file = join(dirname(kubeconfig), `version-${w.ns}.kubeconfig`);
    writeFileSync(file, stringify(kc));
    const r = await edgectl('version', '--kubeconfig', file);
    expect(r.code).toBe(0);
    expect(r.out.split('\n')[1]).toBe(
      'operator: not found (not allowed to list Deployments in every namespace: give -n <namespace>)',
    );
  });
});
