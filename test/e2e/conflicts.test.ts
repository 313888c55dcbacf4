// What the API keeps unique across objects (one CIDR per IP policy, one IP restriction per
// type, one route per match on an edge, one SSH key per credential): the object that would
// collide is Stalled/Conflict naming the other, spends no API call, and proceeds once the
// other is gone. A resource made outside the cluster is found in the kind's bulk list.
// What only the API sees across objects (a login module on a second route of an edge) is its
// refusal, on the second object, naming the first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sshPublicKey } from '../integration/harness.ts';
import { apiRequests, apiWrites } from '../support/operator.ts';
import {
  condition,
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

const apiCalls = async (url: string) => apiWrites(await apiRequests(url));
const EVENTS = { group: '', version: 'v1', plural: 'events' };

describe.skipIf(!!skipReason)('conflicts between objects', () => {
  let w: World;
  let op: OperatorProcess;
  const key = sshPublicKey('ci@example');
  const readyObj = (plural: string, name: string) =>
    waitFor(`${plural}/${name} Ready`, async () => ready(await w.kube.get(res(plural), w.ns, name)), 30_000);
  const conflict = (plural: string, name: string) =>
    waitFor(
      `${plural}/${name} Conflict`,
      async () => {
        const o = await w.kube.get(res(plural), w.ns, name);
        return condition(o, 'Stalled')?.reason === 'Conflict' ? condition(o, 'Stalled')! : undefined;
      },
      30_000,
    );

  beforeAll(async () => {
    w = await world('conflicts');
    op = await startOperator(w.emu, w.ns, ['--resync-period', '10s', '--agent-metrics-interval', '0']);
    await w.kube.create(res('ippolicies'), w.ns, obj('IPPolicy', w.ns, 'corp', {}));
    await w.kube.create(
      res('httpsedges'),
      w.ns,
      obj('HTTPSEdge', w.ns, 'app', { hostports: ['app.example.com:443'] }),
    );
    await readyObj('ippolicies', 'corp');
    await readyObj('httpsedges', 'app');
  });
  afterAll(async () => {
    await op?.kill();
    await w?.close();
  });

  const cases: [string, string, string, Record<string, unknown>, string][] = [
    [
      'IPPolicyRule',
      'ippolicyrules',
      'rule',
      { ipPolicyRef: { name: 'corp' }, cidr: '10.0.0.0/8', action: 'allow' },
      'the same CIDR in the same IP policy',
    ],
    [
      'IPRestriction',
      'iprestrictions',
      'restrict',
      { type: 'dashboard', ipPolicyRefs: [{ name: 'corp' }] },
      'an IP restriction of the same type',
    ],
    [
      'HTTPSEdgeRoute',
      'httpsedgeroutes',
      'route',
      { edgeRef: { name: 'app' }, matchType: 'path_prefix', match: '/api' },
      'the same match on the same edge',
    ],
    ['SSHCredential', 'sshcredentials', 'key', { publicKey: key }, 'the same public key'],
  ];
  for (const [kind, plural, name, spec, what] of cases)
    it(`${kind}: the second is Stalled/Conflict naming the first, with no API call, then Ready once the first is gone`, async () => {
      await w.kube.create(res(plural), w.ns, obj(kind, w.ns, `${name}-1`, spec));
      await readyObj(plural, `${name}-1`);
      const before = await apiCalls(op.metricsUrl);
      await w.kube.create(res(plural), w.ns, obj(kind, w.ns, `${name}-2`, spec));
      const c = await conflict(plural, `${name}-2`);
      expect(c.message).toBe(`${kind} ${name}-1 has ${what}: delete one of them, or change this one`);
      expect(await apiCalls(op.metricsUrl)).toBe(before);
      await w.kube.delete(res(plural), w.ns, `${name}-1`);
      await readyObj(plural, `${name}-2`);
    });

  it('a login module on a second route of an edge (ERR_NGROK_7155): Stalled/APIRejected naming the first, a Warning Event; Ready at the next resync once the first has none', async () => {
    const routes = res('httpsedgeroutes');
    const sso = (match: string) => ({
      edgeRef: { name: 'app' },
      matchType: 'path_prefix',
      match,
      saml: { idpMetadata: '<EntityDescriptor/>' },
    });
    await w.kube.create(routes, w.ns, obj('HTTPSEdgeRoute', w.ns, 'login-1', sso('/sso')));
    await readyObj('httpsedgeroutes', 'login-1');
    await w.kube.create(routes, w.ns, obj('HTTPSEdgeRoute', w.ns, 'login-2', sso('/admin')));
    const stalled = await waitFor(
      'login-2 APIRejected',
      async () => {
        const c = condition(await w.kube.get(routes, w.ns, 'login-2'), 'Stalled');
        return c?.reason === 'APIRejected' ? c : undefined;
      },
      30_000,
    );
    expect(stalled.message).toContain(
      'Enabling OAuth, OIDC, or SAML on more than one route is not supported.',
    );
    expect(stalled.message).toContain(`(HTTPSEdgeRoute ${w.ns}/login-1)`);
    type Event = { type: string; reason: string; message: string; involvedObject: { name: string } };
    const events = (await w.kube.list(EVENTS, w.ns)).items as unknown as Event[];
    const event = events.find((e) => e.involvedObject.name === 'login-2' && e.reason === 'APIRejected');
    expect(event?.type).toBe('Warning');
    expect(event?.message).toContain('Enabling OAuth, OIDC, or SAML on more than one route');
    // the first route drops its login module: the second is taken at the next resync (10 s)
    await w.kube.patch(routes, w.ns, 'login-1', { spec: { saml: null } });
    await waitFor('login-2 Ready', async () => ready(await w.kube.get(routes, w.ns, 'login-2')), 40_000);
  }, 90_000);

  it('a resource made outside the cluster is found in the bulk list and named by its id', async () => {
    const policy = (await w.kube.get(res('ippolicies'), w.ns, 'corp')).status!.id as string;
    const outside = await w.api.ipPolicyRules.create({
      ip_policy_id: policy,
      cidr: '192.0.2.0/24',
      action: 'deny',
    });
    // the next bulk list of the kind (resync 10 s) brings it
    await new Promise((r) => setTimeout(r, 12_000));
    await w.kube.create(
      res('ippolicyrules'),
      w.ns,
      obj('IPPolicyRule', w.ns, 'dup', {
        ipPolicyRef: { name: 'corp' },
        cidr: '192.0.2.0/24',
        action: 'allow',
      }),
    );
    const c = await conflict('ippolicyrules', 'dup');
    expect(c.message).toBe(
      `${outside.id}, made outside the cluster, has the same CIDR in the same IP policy: delete one of them, or change this one`,
    );
    await w.api.ipPolicyRules.delete(outside.id);
    await waitFor(
      'dup Ready after the outside rule went',
      async () => ready(await w.kube.get(res('ippolicyrules'), w.ns, 'dup')),
      40_000,
    );
  }, 90_000);
});
