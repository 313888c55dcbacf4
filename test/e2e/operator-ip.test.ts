// IPPolicy, IPPolicyRule and IPRestriction end to end: a real kube-apiserver, the
// emulator, and the operator as its own process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect } from '../../src/api/client.ts';
import { ID_ANNOTATION } from '../../src/operator/kinds/crd-schema.ts';
import { decodeMetadata } from '../../src/operator/runtime/bindings/owner.ts';
import { KubeError } from '../../src/operator/runtime/kube/kube.ts';
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

const P = res('ippolicies');
const R = res('ippolicyrules');
const X = res('iprestrictions');

describe.skipIf(!!skipReason)('IP kinds against a real API server', () => {
  let w: World;
  let op: OperatorProcess;
  const get = (r: typeof P, name: string) => w.kube.get(r, w.ns, name).catch(() => undefined);
  const readyObj = (r: typeof P, name: string) =>
    waitFor(`${r.plural}/${name} Ready`, async () => {
      const o = await get(r, name);
      return ready(o) ? o : undefined;
    });

  beforeAll(async () => {
    w = await world('ip');
    op = await startOperator(w.emu, w.ns, ['--resync-period', '10s', '--agent-metrics-interval', '1s']);
  });
  afterAll(async () => {
    await op?.kill();
    await w?.close();
  });

  it('converges whatever the creation order: dependents wait for their references', async () => {
    // dependents first, the policy last
    await w.kube.create(
      X,
      w.ns,
      obj('IPRestriction', w.ns, 'dash', {
        type: 'dashboard',
        enforced: true,
        ipPolicyRefs: [{ name: 'corp' }],
      }),
    );
    await w.kube.create(
      R,
      w.ns,
      obj('IPPolicyRule', w.ns, 'office', {
        ipPolicyRef: { name: 'corp' },
        cidr: '203.0.113.0/24',
        action: 'allow',
        description: 'office',
      }),
    );
    const waiting = await waitFor('rule waiting', async () => {
      const o = await get(R, 'office');
      return condition(o, 'Reconciling')?.reason === 'WaitingForReference' ? o : undefined;
    });
    expect(condition(waiting, 'Reconciling')?.message).toContain('IPPolicy corp');
    // and `kubectl describe` shows the wait as an Event, once
    const waits = await waitFor('a WaitingForReference event', async () => {
      const events = (await w.kube.list({ group: '', version: 'v1', plural: 'events' }, w.ns))
        .items as unknown as {
        reason: string;
        message: string;
        involvedObject: { name: string };
        source: { component: string };
      }[];
      const found = events.filter(
        (e) => e.reason === 'WaitingForReference' && e.involvedObject.name === 'office',
      );
      return found.length ? found : undefined;
    });
    expect(waits).toHaveLength(1);
    expect(waits[0]!.message).toContain('IPPolicy corp');
    expect(waits[0]!.source.component).toBe('edge-operator');
    await w.kube.create(P, w.ns, obj('IPPolicy', w.ns, 'corp', { description: 'corporate' }));

    const policy = await readyObj(P, 'corp');
    const rule = await readyObj(R, 'office');
    const restriction = await readyObj(X, 'dash');
    expect(policy.status?.id).toMatch(/^ipp_/);
    expect(rule.status).toMatchObject({ ipPolicyID: policy.status?.id, observedGeneration: 1 });
    // the id annotation (for restores without status) follows once the operator is idle
    await waitFor('the id annotation', async () => {
      const o = await w.kube.get(R, w.ns, 'office');
      return o.metadata.annotations?.[ID_ANNOTATION] === rule.status?.id;
    });
    expect(rule.metadata.finalizers).toContain('edge.tunnel.dev/finalizer');

    const remote = await w.api.ipPolicyRules.get(rule.status!.id as string);
    expect(remote).toMatchObject({
      cidr: '203.0.113.0/24',
      action: 'allow',
      description: 'office',
      ip_policy: { id: policy.status!.id },
    });
    expect(decodeMetadata(remote.metadata).owner).toMatchObject({
      cluster: `e2e-${w.ns}`,
      uid: rule.metadata.uid,
    });
    const x = await w.api.ipRestrictions.get(restriction.status!.id as string);
    expect(x).toMatchObject({ type: 'dashboard', enforced: true });
    // exactly one remote resource per object
    expect(await collect(w.api.ipPolicyRules.list())).toHaveLength(1);
    expect(await collect(w.api.ipPolicies.list())).toHaveLength(1);
  });

  it('shows ID and Ready in the table kubectl prints', async () => {
    const t = await tableOf(w, 'ippolicyrules');
    const names = t.columnDefinitions.map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining(['Name', 'ID', 'Ready', 'Age']));
    const row = t.rows.find((r) => r.cells[0] === 'office')!;
    expect(row.cells[names.indexOf('ID')]).toMatch(/^ipr_/);
    expect(row.cells[names.indexOf('Ready')]).toBe('True');
  });

  it('applies a spec change with one update and puts back an out-of-band change', async () => {
    const before = await metric(op.metricsUrl, 'edge_api_requests_total', {
      operation: 'ipPolicyRules.update',
    });
    const rule = await get(R, 'office');
    await w.kube.patch(R, w.ns, 'office', { spec: { cidr: '198.51.100.0/24' } });
    await waitFor(
      'cidr updated on the API',
      async () => (await w.api.ipPolicyRules.get(rule!.status!.id as string)).cidr === '198.51.100.0/24',
    );
    await readyObj(R, 'office');
    expect(
      await metric(op.metricsUrl, 'edge_api_requests_total', { operation: 'ipPolicyRules.update' }),
    ).toBe(before + 1);

    // someone edits the rule behind the operator's back
    await w.api.ipPolicyRules.update(rule!.status!.id as string, {
      cidr: '192.0.2.0/24',
      description: 'tampered',
    });
    await waitFor(
      'drift put back',
      async () => {
        const r = await w.api.ipPolicyRules.get(rule!.status!.id as string);
        return r.cidr === '198.51.100.0/24' && r.description === 'office';
      },
      20_000,
    );
  });

  it('refuses at admission what the spec forbids, with a message naming the field', async () => {
    const bad = async (spec: Record<string, unknown>) =>
      (await w.kube
        .create(R, w.ns, obj('IPPolicyRule', w.ns, `bad-${Math.random().toString(36).slice(2, 7)}`, spec))
        .catch((e) => e)) as KubeError;
    const e1 = await bad({ ipPolicyRef: { name: 'corp' }, cidr: '10.0.0.0/40', action: 'allow' });
    expect(e1).toBeInstanceOf(KubeError);
    expect(e1.status).toBe(422);
    expect(e1.message).toContain('cidr must be an IPv4 or IPv6 address');
    const e2 = await bad({
      ipPolicyRef: { name: 'corp' },
      ipPolicyID: 'ipp_x',
      cidr: '10.0.0.0/8',
      action: 'allow',
    });
    expect(e2.message).toContain('exactly one of ipPolicyRef or ipPolicyID');
    const e3 = await bad({ ipPolicyRef: { name: 'corp' }, cidr: '10.0.0.0/8', action: 'maybe' });
    expect(e3.message).toContain('spec.action');
    const e4 = (await w.kube
      .patch(R, w.ns, 'office', { spec: { action: 'deny' } })
      .catch((e) => e)) as KubeError;
    expect(e4.message).toContain('action is immutable');
  });

  it('reports an API 400 as Stalled with the API message, and recovers when the spec is fixed', async () => {
    await w.kube.create(
      X,
      w.ns,
      obj('IPRestriction', w.ns, 'ghost', { type: 'api', ipPolicyIDs: ['ipp_doesnotexist'] }),
    );
    const stalled = await waitFor('Stalled', async () => {
      const o = await get(X, 'ghost');
      return condition(o, 'Stalled')?.status === 'True' ? o : undefined;
    });
    expect(condition(stalled, 'Stalled')?.reason).toBe('APIRejected');
    expect(condition(stalled, 'Stalled')?.message).toContain('ipp_doesnotexist does not exist');
    expect(condition(stalled, 'Ready')?.status).toBe('False');
    const events = await w.kube.request<{
      items: { reason: string; message: string; involvedObject: { name: string } }[];
    }>('GET', `/api/v1/namespaces/${w.ns}/events`);
    expect(events.items.some((e) => e.involvedObject.name === 'ghost' && e.reason === 'APIRejected')).toBe(
      true,
    );
    // no hot retry: creates stay at the failed attempt while the spec is unchanged (a
    // resync, every 10 s here, may try once more)
    const attempts = await metric(op.metricsUrl, 'edge_api_requests_total', {
      operation: 'ipRestrictions.create',
      status: '400',
    });
    await new Promise((r) => setTimeout(r, 1500));
    expect(
      await metric(op.metricsUrl, 'edge_api_requests_total', {
        operation: 'ipRestrictions.create',
        status: '400',
      }),
    ).toBeLessThanOrEqual(attempts + 1);

    const policy = await get(P, 'corp');
    await w.kube.patch(X, w.ns, 'ghost', { spec: { ipPolicyIDs: [policy!.status!.id] } });
    const fixed = await readyObj(X, 'ghost');
    expect(condition(fixed, 'Stalled')).toBeUndefined();
  });

  it('adopts an existing remote resource named by the id annotation instead of creating one', async () => {
    const policy = await get(P, 'corp');
    const existing = await w.api.ipPolicyRules.create({
      ip_policy_id: policy!.status!.id as string,
      cidr: '192.0.2.0/24',
      action: 'deny',
      metadata: 'made by hand',
    });
    await w.kube.create(
      R,
      w.ns,
      obj(
        'IPPolicyRule',
        w.ns,
        'adopted',
        { ipPolicyRef: { name: 'corp' }, cidr: '192.0.2.0/24', action: 'deny', metadata: 'now in git' },
        { [ID_ANNOTATION]: existing.id },
      ),
    );
    const o = await readyObj(R, 'adopted');
    expect(o.status?.id).toBe(existing.id);
    const after = await w.api.ipPolicyRules.get(existing.id);
    expect(decodeMetadata(after.metadata)).toMatchObject({
      user: 'now in git',
      owner: { uid: o.metadata.uid },
    });
    expect((await collect(w.api.ipPolicyRules.list())).filter((r) => r.cidr === '192.0.2.0/24')).toHaveLength(
      1,
    );
  });

  it('deletes the remote resource with the object, and keeps it with deletionPolicy Retain', async () => {
    await w.kube.create(
      R,
      w.ns,
      obj('IPPolicyRule', w.ns, 'temp', {
        ipPolicyRef: { name: 'corp' },
        cidr: '10.9.0.0/16',
        action: 'allow',
      }),
    );
    await w.kube.create(
      R,
      w.ns,
      obj('IPPolicyRule', w.ns, 'keep', {
        ipPolicyRef: { name: 'corp' },
        cidr: '10.8.0.0/16',
        action: 'allow',
        deletionPolicy: 'Retain',
      }),
    );
    const temp = await readyObj(R, 'temp');
    const keep = await readyObj(R, 'keep');
    await w.kube.delete(R, w.ns, 'temp');
    await w.kube.delete(R, w.ns, 'keep');
    await waitFor('objects gone', async () => !(await get(R, 'temp')) && !(await get(R, 'keep')));
    await expect(w.api.ipPolicyRules.get(temp.status!.id as string)).rejects.toMatchObject({ status: 404 });
    await expect(w.api.ipPolicyRules.get(keep.status!.id as string)).resolves.toMatchObject({
      cidr: '10.8.0.0/16',
    });
    // the retained rule is the user's now; it would keep its policy in use
    await w.api.ipPolicyRules.delete(keep.status!.id as string);
  });

  it('deleting everything at once leaves nothing the operator created', async () => {
    for (const r of [P, R, X]) {
      const list = await w.kube.list(r, w.ns);
      for (const o of list.items) await w.kube.delete(r, w.ns, o.metadata.name);
    }
    await waitFor(
      'all objects finalized',
      async () => {
        const counts = await Promise.all(
          [P, R, X].map(async (r) => (await w.kube.list(r, w.ns)).items.length),
        );
        return counts.every((n) => n === 0);
      },
      60_000,
    );
    const mine = (xs: { metadata?: string }[]) =>
      xs.filter((x) => decodeMetadata(x.metadata).owner?.cluster === `e2e-${w.ns}`);
    expect(mine(await collect(w.api.ipPolicies.list()))).toEqual([]);
    expect(mine(await collect(w.api.ipPolicyRules.list()))).toEqual([]);
    expect(mine(await collect(w.api.ipRestrictions.list()))).toEqual([]);
  });

  it('exports gauges of online sessions and tunnels', async () => {
    await fetch(`${w.emu.url}/_emulator/agents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${w.emu.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'a1',
        tunnels: [{ forwards_to: 'localhost:1' }, { forwards_to: 'localhost:2' }],
      }),
    });
    await waitFor(
      'gauges',
      async () =>
        (await metric(op.metricsUrl, 'edge_tunnel_sessions_online')) === 1 &&
        (await metric(op.metricsUrl, 'edge_tunnels_online')) === 2,
    );
  });

  it('serves reconcile and API call counters on /metrics', async () => {
    expect(
      await metric(op.metricsUrl, 'controller_runtime_reconcile_total', { controller: 'ippolicyrule' }),
    ).toBeGreaterThan(0);
    expect(
      await metric(op.metricsUrl, 'edge_api_requests_total', {
        operation: 'ipPolicyRules.create',
        status: '201',
      }),
    ).toBeGreaterThan(0);
    expect(await metric(op.metricsUrl, 'workqueue_adds_total', { name: 'ippolicy' })).toBeGreaterThan(0);
  });
});

async function tableOf(w: World, plural: string) {
  return w.kube.request<{ columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] }>(
    'GET',
    `/apis/edge.tunnel.dev/v1alpha1/namespaces/${w.ns}/${plural}`,
    { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
  );
}
