// Namespaces that hold nothing the operator lists: no Secret (the usual case since Kubernetes
// stopped making service-account token Secrets), no object of some kinds. The API server
// answers such a metadata-only list with `"items": null`; the operator must start, become
// ready and reconcile anyway.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Informer } from '../../src/operator/runtime/kube/informer.ts';
import { METADATA_ONLY } from '../../src/operator/runtime/kube/kube.ts';
import { createLogger } from '../../src/operator/runtime/logging.ts';
import {
  NAMESPACES,
  type OperatorProcess,
  obj,
  ready,
  res,
  skipReason,
  startOperator,
  type World,
  waitFor,
  world,
} from './harness.ts';

const SECRETS = { group: '', version: 'v1', plural: 'secrets' };
const P = res('ippolicies');

describe.skipIf(!!skipReason)('namespaces without Secrets or objects', () => {
  let w: World;
  let op: OperatorProcess | undefined;
  const teamA = `${Date.now().toString(36)}-team-a`;
  const teamB = `${Date.now().toString(36)}-team-b`;

  beforeAll(async () => {
    // the test's own namespace holds the operator's Lease and digest-key Secret; the
    // watched namespaces hold no Secret at all
    w = await world('empty');
    for (const name of [teamA, teamB]) await w.kube.create(NAMESPACES, undefined, { metadata: { name } });
  });
  afterAll(async () => {
    await op?.kill();
    for (const name of [teamA, teamB]) await w?.kube.delete(NAMESPACES, undefined, name).catch(() => {});
    await w?.close();
  });

  it('the API server answers an empty metadata-only list with items null, and the client reads it as empty', async () => {
    const raw = await w.kube.request<{ kind: string; items: unknown }>(
      'GET',
      `/api/v1/namespaces/${teamA}/secrets`,
      { accept: METADATA_ONLY.list },
    );
    expect(raw.kind).toBe('PartialObjectMetadataList');
    expect(raw.items).toBeNull();
    expect((await w.kube.list(SECRETS, teamA, undefined, METADATA_ONLY.list)).items).toEqual([]);
  });

  it('an informer over a cluster with no Secret at all syncs (a selector no Secret matches lists the same)', async () => {
    const inf = new Informer({
      kube: w.kube,
      resource: SECRETS,
      log: createLogger('silent'),
      metadataOnly: true,
      labelSelector: `edge.tunnel.dev/none=${Date.now().toString(36)}`,
    });
    inf.start();
    try {
      await waitFor('informer synced', () => inf.hasSynced, 10_000, 50);
      expect(inf.cache.size).toBe(0);
    } finally {
      inf.stop();
    }
  });

  it('watching two namespaces without Secrets, one of them empty of everything: ready within 10 s, objects converge', async () => {
    op = await startOperator(w.emu, w.ns, [
      '--namespaces',
      `${teamA},${teamB}`,
      '--leader-election-namespace',
      w.ns,
    ]);
    const started = Date.now();
    const url = op.metricsUrl.replace('/metrics', '/readyz');
    await waitFor('/readyz 200', async () => (await fetch(url)).ok, 10_000, 100);
    const readyAfterMs = Date.now() - started;
    expect(readyAfterMs).toBeLessThan(10_000);
    await w.kube.create(P, teamA, obj('IPPolicy', teamA, 'office', { description: 'team a' }));
    const o = await waitFor('IPPolicy Ready in a namespace without Secrets', async () => {
      const x = await w.kube.get(P, teamA, 'office');
      return ready(x) ? x : undefined;
    });
    expect((o.status as { id?: string }).id).toMatch(/^ipp_/);
    expect(op.logs.some((l) => l.includes('is not iterable'))).toBe(false);
  });
});
