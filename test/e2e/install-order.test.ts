// Install order: the operator started on an API server without its CRDs says once which are
// missing and how to install them, /readyz says the same, no watch fails over and over, and
// it starts reconciling once they are applied, without a restart.
//
// Its own API server (etcd + kube-apiserver, as the global setup starts them): the suite's
// server has the CRDs, and deleting a CRD there would delete every object of the kind and
// wait on their finalizers. So this needs the local control plane, not E2E_KUBECONFIG.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/server.ts';
import { clusterDown, clusterUp, REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { apply, readManifests } from '../../src/operator/apply.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { Kube } from '../../src/operator/runtime/kube/kube.ts';
import { kubeconfigTarget } from '../../src/operator/runtime/kube/kubeconfig-target.ts';
import { startOperatorProcess } from '../support/operator.ts';
import {
  freePort,
  NAMESPACES,
  type OperatorProcess,
  obj,
  ready,
  res,
  skipReason,
  waitFor,
} from './harness.ts';

const DIR = join(REPO_ROOT, '.cache', 'e2e-crdless-cluster');
const P = res('ippolicies');
const LAST = 'tlsedges';

describe.skipIf(!!skipReason || !!process.env.E2E_KUBECONFIG)('started before its CRDs', () => {
  let kube: Kube;
  let emu: Emulator;
  let op: OperatorProcess;
  let port: number;
  const ns = 'team';
  const readyz = async () => {
    const r = await fetch(`http://127.0.0.1:${port}/readyz`);
    return { status: r.status, body: await r.text() };
  };
  const said = (text: string) => op.logs.filter((l) => l.includes(text));

  beforeAll(async () => {
    const state = await clusterUp({ dir: DIR, log: () => {} });
    kube = new Kube(kubeconfigTarget(state.kubeconfig));
    await kube.create(NAMESPACES, undefined, { metadata: { name: ns } });
    emu = await startEmulator();
    port = await freePort();
    op = await startOperatorProcess({
      emu,
      kubeconfig: state.kubeconfig,
      namespace: ns,
      clusterId: 'e2e-install-order',
      port,
      extra: ['--api-rate-limit', '100000'],
      logLevel: 'debug',
    });
  });
  afterAll(async () => {
    await op?.kill();
    await emu?.close();
    await clusterDown({ dir: DIR, log: () => {} });
  });

  it('says once which CRDs are missing and how to install them; /readyz says the same; no watch fails', async () => {
    const all = BINDINGS.map((b) => `${b.plural}.edge.tunnel.dev`);
    const r = await waitFor('/readyz naming the missing CRDs', async () => {
      const x = await readyz();
      return x.body.includes('CRDs not installed') ? x : undefined;
    });
    expect(r.status).toBe(503);
    for (const crd of all) expect(r.body).toContain(crd);
    expect(r.body).toContain('kubectl apply --server-side -f crds/');
    expect(r.body).toContain('crds.install=true');
    // two more looks at discovery (5 s apart): still one line
    await new Promise((res) => setTimeout(res, 11_000));
    expect(said('CRDs not installed')).toHaveLength(1);
    expect(said('watch failed')).toEqual([]);
    expect((await readyz()).status).toBe(503);
  });

  it('CRDs applied but one: says again, naming only that one', async () => {
    const crds = readManifests(join(REPO_ROOT, 'crds'));
    await apply(
      kube,
      crds.filter((c) => c.metadata.name !== `${LAST}.edge.tunnel.dev`),
    );
    const r = await waitFor(
      `/readyz naming only ${LAST}`,
      async () => {
        const x = await readyz();
        return x.body.includes(`CRDs not installed: ${LAST}.edge.tunnel.dev;`) ? x : undefined;
      },
      30_000,
    );
    expect(r.status).toBe(503);
    expect(said('CRDs not installed')).toHaveLength(2);
    expect(said('CRDs not installed')[1]).toContain(`CRDs not installed: ${LAST}.edge.tunnel.dev;`);
  });

  it('the last CRD applied: ready and reconciling, without a restart', async () => {
    await apply(
      kube,
      readManifests(join(REPO_ROOT, 'crds')).filter((c) => c.metadata.name === `${LAST}.edge.tunnel.dev`),
    );
    await waitFor('/readyz ok', async () => (await readyz()).status === 200, 30_000);
    expect(said('CRDs installed: starting')).toHaveLength(1);
    await kube.create(P, ns, obj('IPPolicy', ns, 'office', {}));
    const o = await waitFor('office Ready', async () => {
      const x = await kube.get(P, ns, 'office').catch(() => undefined);
      return ready(x) ? x : undefined;
    });
    expect(emu.store.get('ipPolicies', (o.status as { id: string }).id)).toBeDefined();
    expect(said('watch failed')).toEqual([]);
    expect(op.proc.exitCode).toBeNull();
  });
});
