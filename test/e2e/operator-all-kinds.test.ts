// Every kind, from deploy/examples, against a real API server: one apply converges in any
// order, module edits touch only that module, Secrets rotate, deletion leaves nothing.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect } from '../../src/api/client.ts';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { apply, readManifests } from '../../src/operator/apply.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { decodeMetadata } from '../../src/operator/runtime/bindings/owner.ts';
import {
  condition,
  metric,
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

const ROUTES = res('httpsedgeroutes');
const SECRETS = { group: '', version: 'v1', plural: 'secrets' };

describe.skipIf(!!skipReason)('all kinds from deploy/examples', () => {
  let w: World;
  let op: OperatorProcess;
  const route = async (name: string) => {
    const o = await w.kube.get(ROUTES, w.ns, name);
    return w.api.httpsEdgeRoutes.get(o.status!.edgeID as string, o.status!.id as string);
  };
  const puts = (module: string) =>
    metric(op.metricsUrl, 'edge_api_requests_total', { operation: `httpsEdgeRouteModules.${module}.put` });
  const allReady = () =>
    waitFor(
      'every object Ready',
      async () => {
        for (const b of BINDINGS) {
          for (const o of (await w.kube.list(res(b.plural), w.ns)).items)
            if (!ready(o) || o.status?.observedGeneration !== o.metadata.generation) return false;
        }
        return true;
      },
      60_000,
    );

  beforeAll(async () => {
    w = await world('kinds');
    op = await startOperator(w.emu, w.ns, ['--resync-period', '10s']);
    // reverse order: routes before edges, edges before backends, rules before the policy
    const objs = readManifests(join(REPO_ROOT, 'deploy/examples'))
      .filter((o) => o.kind !== 'Namespace')
      .map((o) => ({ ...o, metadata: { ...o.metadata, namespace: w.ns } }))
      .reverse();
    await apply(w.kube, objs, w.ns);
  });
  afterAll(async () => {
    await op?.kill();
    await w?.close();
  });

  it('converges in one apply; the API holds exactly what the manifests describe', async () => {
    await allReady();
    expect(await collect(w.api.ipPolicies.list())).toHaveLength(1);
    expect(await collect(w.api.ipPolicyRules.list())).toHaveLength(2);
    const tgbs = await collect(w.api.tunnelGroupBackends.list());
    expect(
      tgbs.map((b) => b.labels).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    ).toEqual([
      { app: 'web', track: 'canary' },
      { app: 'web', track: 'stable' },
    ]);
    const [wb] = await collect(w.api.weightedBackends.list());
    expect(Object.values(wb!.backends).sort()).toEqual([10, 90]);
    const [cred] = await collect(w.api.sshCredentials.list());
    expect(cred!.acl).toEqual(['bind:*.app.example.com', 'bind:app=web']);
    const [edge] = await collect(w.api.httpsEdges.list());
    expect(edge!.hostports).toEqual(['app.example.com:443']);
    expect(edge!.tls_termination).toMatchObject({ enabled: true, min_version: '1.2' });
    expect(edge!.routes).toHaveLength(2);

    const root = await route('app-root');
    expect(root.backend?.backend.id).toBe(wb!.id);
    expect(root.ip_restriction?.ip_policies).toHaveLength(1);
    expect(root.circuit_breaker).toMatchObject({ num_buckets: 10, error_threshold_percentage: 0.5 });
    expect(root.compression).toEqual({ enabled: true });
    expect(root.response_headers?.add).toEqual({ 'strict-transport-security': 'max-age=63072000' });
    expect(root.oidc).toMatchObject({
      issuer: 'https://accounts.example.com',
      client_id: 'edge-app',
      client_secret: 'change-me',
    });
    expect((await route('app-webhooks')).webhook_verification).toMatchObject({
      provider: 'stripe',
      secret: 'whsec_change-me',
    });

    const [tcp] = await collect(w.api.tcpEdges.list());
    expect(tcp!.backend?.enabled).toBe(true);
    const [tls] = await collect(w.api.tlsEdges.list());
    expect(tls!.tls_termination).toMatchObject({ terminate_at: 'upstream', min_version: null });
    // no module was written twice on the way
    for (const m of ['circuit_breaker', 'oidc', 'webhook_verification', 'backend'])
      expect(await puts(m), m).toBe(0);
  });

  it('editing one module changes only that module on the API', async () => {
    const before = Object.fromEntries(
      await Promise.all(
        ['circuit_breaker', 'oidc', 'compression', 'response_headers', 'backend'].map(async (m) => [
          m,
          await puts(m),
        ]),
      ),
    );
    await w.kube.patch(ROUTES, w.ns, 'app-root', { spec: { circuitBreaker: { numBuckets: 20 } } });
    await waitFor(
      'circuit breaker updated',
      async () => (await route('app-root')).circuit_breaker?.num_buckets === 20,
    );
    await allReady();
    expect(await puts('circuit_breaker')).toBe(before.circuit_breaker + 1);
    for (const m of ['oidc', 'compression', 'response_headers', 'backend'])
      expect(await puts(m), m).toBe(before[m]);
    expect(
      await metric(op.metricsUrl, 'edge_api_requests_total', { operation: 'httpsEdgeRoutes.update' }),
    ).toBe(0);
  });

  it('removing a module from the spec deletes it on the API', async () => {
    await w.kube.patch(ROUTES, w.ns, 'app-root', { spec: { compression: null } });
    await waitFor('compression removed', async () => (await route('app-root')).compression === null);
    expect(
      await metric(op.metricsUrl, 'edge_api_requests_total', {
        operation: 'httpsEdgeRouteModules.compression.delete',
      }),
    ).toBe(1);
  });

  it('a rotated Secret re-applies the modules that use it within seconds', async () => {
    const t0 = Date.now();
    await w.kube.patch(SECRETS, w.ns, 'edge-auth', { stringData: { 'oidc-client-secret': 'rotated-oidc' } });
    await waitFor(
      'oidc secret rotated',
      async () => (await route('app-root')).oidc?.client_secret === 'rotated-oidc',
      15_000,
    );
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect((await route('app-webhooks')).webhook_verification?.secret).toBe('whsec_change-me');
  });

  it('waits with a condition naming a missing Secret key', async () => {
    await apply(w.kube, [
      obj('HTTPSEdgeRoute', w.ns, 'hooks2', {
        edgeRef: { name: 'app' },
        matchType: 'exact_path',
        match: '/hooks/2',
        webhookVerification: { provider: 'slack', secretRef: { name: 'edge-auth', key: 'slack' } },
      }),
    ]);
    const o = await waitFor('waiting for secret', async () => {
      const x = await w.kube.get(ROUTES, w.ns, 'hooks2');
      return condition(x, 'Reconciling')?.reason === 'WaitingForSecret' ? x : undefined;
    });
    expect(condition(o, 'Reconciling')?.message).toBe(
      'Secret edge-auth has no key slack (spec.webhookVerification.secretRef)',
    );
    await w.kube.patch(SECRETS, w.ns, 'edge-auth', { stringData: { slack: 'slack-signing' } });
    await waitFor('hooks2 Ready', async () => ready(await w.kube.get(ROUTES, w.ns, 'hooks2')));
  });

  it('writes the SAML service-provider values to status', async () => {
    // a login module on one route of an edge (ERR_NGROK_7155): app-root has OIDC
    await apply(w.kube, [
      obj('HTTPSEdge', w.ns, 'sso', { hostports: ['sso.example.com:443'] }),
      obj('HTTPSEdgeRoute', w.ns, 'sso', {
        edgeRef: { name: 'sso' },
        matchType: 'path_prefix',
        match: '/sso',
        saml: { idpMetadata: '<EntityDescriptor/>', authorizedGroups: ['eng'] },
      }),
    ]);
    const o = await waitFor('sso Ready', async () => {
      const x = await w.kube.get(ROUTES, w.ns, 'sso');
      return ready(x) ? x : undefined;
    });
    const saml = o.status?.saml as Record<string, string>;
    expect(saml.entityID).toBe(saml.metadataURL);
    expect(saml.assertionConsumerServiceURL).toMatch(/\/acs$/);
    expect(saml.requestSigningCertificatePEM).toContain('BEGIN CERTIFICATE');

    // SAML removed: its values leave status too (Ready must not show stale service-provider URLs)
    await w.kube.patch(ROUTES, w.ns, 'sso', { spec: { saml: null } });
    const after = await waitFor('sso in sync without SAML', async () => {
      const x = await w.kube.get(ROUTES, w.ns, 'sso');
      return ready(x) && x.status?.observedGeneration === x.metadata.generation ? x : undefined;
    });
    expect(after.status?.saml).toBeUndefined();
    expect(after.status?.id).toBe(o.status?.id);
  });

  it('puts back a module changed behind its back', async () => {
    const r = await w.kube.get(ROUTES, w.ns, 'app-root');
    await w.api.httpsEdgeRouteModules.response_headers.put(
      r.status!.edgeID as string,
      r.status!.id as string,
      { add: { 'x-evil': '1' }, remove: [] },
    );
    await waitFor(
      'response headers restored',
      async () => (await route('app-root')).response_headers?.add?.['x-evil'] === undefined,
      20_000,
    );
  });

  it('every kind: a spec change reaches the API, and an out-of-band change is put back', async () => {
    // how to read and tamper with each kind's remote resource
    type Remote = { description?: string };
    const remote: Record<
      string,
      {
        get(s: Record<string, unknown>): Promise<Remote>;
        tamper(s: Record<string, unknown>): Promise<unknown>;
      }
    > = {};
    const family = {
      IPPolicy: w.api.ipPolicies,
      IPPolicyRule: w.api.ipPolicyRules,
      IPRestriction: w.api.ipRestrictions,
      TunnelGroupBackend: w.api.tunnelGroupBackends,
      WeightedBackend: w.api.weightedBackends,
      SSHCredential: w.api.sshCredentials,
      HTTPSEdge: w.api.httpsEdges,
      TCPEdge: w.api.tcpEdges,
      TLSEdge: w.api.tlsEdges,
    } as const;
    for (const [kind, f] of Object.entries(family)) {
      remote[kind] = {
        get: (s) => f.get(s.id as string),
        tamper: (s) => f.update(s.id as string, { description: 'tampered' }),
      };
    }
    remote.HTTPSEdgeRoute = {
      get: (s) => w.api.httpsEdgeRoutes.get(s.edgeID as string, s.id as string),
      tamper: (s) =>
        w.api.httpsEdgeRoutes.update(s.edgeID as string, s.id as string, { description: 'tampered' }),
    };
    expect(Object.keys(remote).sort()).toEqual(BINDINGS.map((b) => b.kind).sort());

    await Promise.all(
      BINDINGS.map(async (b) => {
        const [o] = (await w.kube.list(res(b.plural), w.ns)).items;
        expect(o, b.kind).toBeTruthy();
        const name = o!.metadata.name;
        await w.kube.patch(res(b.plural), w.ns, name, { spec: { description: `managed ${b.kind}` } });
        const status = await waitFor(`${b.kind} updated`, async () => {
          const x = await w.kube.get(res(b.plural), w.ns, name);
          return x.status?.observedGeneration === x.metadata.generation && ready(x) ? x.status! : undefined;
        });
        expect((await remote[b.kind]!.get(status)).description, b.kind).toBe(`managed ${b.kind}`);
        await remote[b.kind]!.tamper(status);
        await waitFor(
          `${b.kind} drift put back`,
          async () => (await remote[b.kind]!.get(status)).description === `managed ${b.kind}`,
          20_000,
        );
      }),
    );
  });

  it('keeps secret values out of status and events', async () => {
    const dump = JSON.stringify([
      ...(await Promise.all(
        BINDINGS.map(async (b) => (await w.kube.list(res(b.plural), w.ns)).items.map((o) => o.status)),
      )),
      (await w.kube.request('GET', `/api/v1/namespaces/${w.ns}/events`)) as unknown,
    ]);
    for (const secret of ['change-me', 'rotated-oidc', 'whsec_change-me', 'slack-signing', w.emu.apiKey])
      expect(dump).not.toContain(secret);
    const logs = op.logs.join('\n');
    for (const secret of ['rotated-oidc', 'whsec_change-me', 'slack-signing', w.emu.apiKey])
      expect(logs).not.toContain(secret);
  });

  it('deleting everything leaves nothing the operator created on the API', async () => {
    for (const b of BINDINGS)
      for (const o of (await w.kube.list(res(b.plural), w.ns)).items)
        await w.kube.delete(res(b.plural), w.ns, o.metadata.name);
    await waitFor(
      'all finalized',
      async () => {
        for (const b of BINDINGS) if ((await w.kube.list(res(b.plural), w.ns)).items.length) return false;
        return true;
      },
      90_000,
    );
    const state = (await (
      await fetch(`${w.emu.url}/_emulator/state`, { headers: { authorization: `Bearer ${w.emu.adminKey}` } })
    ).json()) as Record<string, { metadata?: string }[]>;
    for (const [coll, items] of Object.entries(state)) {
      if (['tunnelSessions', 'tunnels', 'agents'].includes(coll)) continue;
      expect(
        items.filter((x) => decodeMetadata(x.metadata).owner),
        coll,
      ).toEqual([]);
    }
  });
});
