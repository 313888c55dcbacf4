// edgectl plan's pure part: the engine's decisions described (a create's body, an update's
// fields, a refusal), the exit code of a whole plan, and the text and JSON it prints.
import { describe, expect, it } from 'vitest';
import { createClient, type EdgeClient } from '../../src/api/client.ts';
import { renderPlan, renderPlanJson } from '../../src/cli/plan-output.ts';
import { HTTPSEdgeRoute } from '../../src/operator/kinds/https-edge-route.ts';
import { IPPolicy } from '../../src/operator/kinds/ip-policy.ts';
import { IPPolicyRule } from '../../src/operator/kinds/ip-policy-rule.ts';
import { preview } from '../../src/operator/preview.ts';
import { withDefaults } from '../../src/operator/preview-cache.ts';
import {
  changesOf,
  exitCodeOf,
  maskSecrets,
  type PlanAction,
  type PlanEntry,
  placeholderId,
  SECRET,
  summaryOf,
} from '../../src/operator/preview-entry.ts';
import { describeSync } from '../../src/operator/preview-plan.ts';
import { ID_ANNOTATION } from '../../src/operator/runtime/constants.ts';
import type { Remote, Wanted } from '../../src/operator/runtime/engine/index.ts';
import { type Kube, KubeError, type KubeObject, type ResourcePath } from '../../src/operator/runtime/kube.ts';

const entry = (action: PlanAction, more: Partial<PlanEntry> = {}): PlanEntry => ({
  kind: 'IPPolicy',
  namespace: 'team',
  name: `p-${action}`,
  action,
  ...more,
});

describe('the exit code of a plan (as terraform plan -detailed-exitcode)', () => {
  it.each<[string, PlanAction[], number]>([
    ['no object', [], 0],
    ['nothing to do', ['nothing', 'nothing'], 0],
    ['a create', ['nothing', 'create'], 2],
    ['an update', ['update'], 2],
    ['an adoption', ['adopt'], 2],
    ['a delete', ['delete', 'nothing'], 2],
    ['a refusal', ['refuse'], 1],
    ['a refusal and a create: the refusal wins', ['create', 'refuse'], 1],
    ['a wait and an update', ['update', 'wait'], 1],
    ['an object the preview cannot tell', ['nothing', 'error'], 1],
  ])('%s -> %i', (_what, actions, code) => {
    expect(exitCodeOf(actions.map((a) => entry(a)))).toBe(code);
  });

  it('the summary names every action, 0 included', () => {
    expect(summaryOf([entry('create'), entry('create'), entry('refuse')])).toEqual({
      create: 2,
      update: 0,
      adopt: 0,
      delete: 0,
      nothing: 0,
      refuse: 1,
      wait: 0,
      error: 0,
    });
  });
});

const common = { description: 'office', metadata: '{"edge.tunnel.dev/owner":{}}' };
const want = (desired: Record<string, unknown>): Wanted => ({ desired, modules: new Map(), common });

describe("the engine's decisions described", () => {
  it('a create: the wire body, a reference to an object not made yet as its placeholder', () => {
    const d = describeSync(
      IPPolicyRule,
      { action: 'create' },
      want({ cidr: '192.0.2.0/24', action: 'allow', ip_policy_id: placeholderId('IPPolicy', 'corp') }),
    );
    expect(d).toEqual({
      action: 'create',
      body: {
        cidr: '192.0.2.0/24',
        action: 'allow',
        ip_policy_id: '<id of IPPolicy/corp>',
        description: 'office',
        metadata: common.metadata,
      },
    });
  });

  it('an update: each field patched with what the API holds', () => {
    const remote: Remote = { id: 'ipp_1', description: 'a', metadata: common.metadata };
    const d = describeSync(
      IPPolicy,
      { action: 'update', id: 'ipp_1', patch: { description: 'b' }, modules: [] },
      want({}),
      { found: true, remote },
    );
    expect(d).toEqual({
      action: 'update',
      id: 'ipp_1',
      changes: [{ field: 'description', was: 'a', will: 'b' }],
    });
  });

  it('a stall: refused with its reason and message; nothing: the id alone', () => {
    expect(
      describeSync(
        IPPolicy,
        { action: 'stall', reason: 'OwnedElsewhere', message: 'ipp_2 is managed by ...' },
        want({}),
      ),
    ).toEqual({ action: 'refuse', reason: 'OwnedElsewhere', message: 'ipp_2 is managed by ...' });
    expect(
      describeSync(IPPolicy, { action: 'nothing', id: 'ipp_1', patch: {}, modules: [] }, want({})),
    ).toEqual({
      action: 'nothing',
      id: 'ipp_1',
    });
  });

  it('secret values are never shown: in a module body, and a change of a secret alone says so', () => {
    expect(
      maskSecrets({ provider: { google: { client_id: 'id', client_secret: 's3cret' } } }, [
        'provider.*.client_secret',
      ]),
    ).toEqual({
      provider: { google: { client_id: 'id', client_secret: SECRET } },
    });
    const remote = {
      id: 'rt_1',
      oidc: { issuer: 'https://idp', client_id: 'c', client_secret: 'old' },
    } as Remote;
    const put = { issuer: 'https://idp', client_id: 'c', client_secret: 'new' };
    const changes = changesOf(HTTPSEdgeRoute, remote, {}, [{ name: 'oidc', put }]);
    expect(JSON.stringify(changes)).not.toMatch(/old|new/);
    expect(changes).toEqual([{ field: 'oidc (a secret value)', was: SECRET, will: '(another secret)' }]);
  });

  it("the CRD's defaults are applied to a file's spec, as the API server applies them", () => {
    const schema = {
      type: 'object',
      properties: {
        deletionPolicy: { type: 'string', default: 'Delete' },
        mod: { type: 'object', properties: { enabled: { type: 'boolean', default: true } } },
      },
    };
    expect(withDefaults(schema, { mod: {} })).toEqual({ deletionPolicy: 'Delete', mod: { enabled: true } });
    expect(withDefaults(schema, { deletionPolicy: 'Retain' })).toEqual({ deletionPolicy: 'Retain' });
  });
});

describe('the printed plan', () => {
  const plan: PlanEntry[] = [
    entry('nothing', { name: 'corp', id: 'ipp_1' }),
    entry('update', { name: 'corp', id: 'ipp_1', changes: [{ field: 'description', was: 'a', will: 'b' }] }),
    {
      kind: 'IPPolicyRule',
      namespace: 'team',
      name: 'office',
      action: 'create',
      body: { cidr: '192.0.2.0/24', ip_policy_id: '<id of IPPolicy/corp>' },
    },
    entry('refuse', {
      name: 'steal',
      reason: 'OwnedElsewhere',
      message: 'ipp_9 is managed by an object in another namespace; not taking it over',
    }),
  ];

  it('text: a line per object, a create with its body, an update field: was -> will be, a refusal with its reason', () => {
    expect(renderPlan(plan)).toBe(
      [
        '= IPPolicy team/corp: no changes ipp_1',
        '~ IPPolicy team/corp: update ipp_1',
        '    description: "a" -> "b"',
        '+ IPPolicyRule team/office: create',
        '    cidr: "192.0.2.0/24"',
        '    ip_policy_id: "<id of IPPolicy/corp>"',
        '! IPPolicy team/steal: refused: OwnedElsewhere: ipp_9 is managed by an object in another namespace; not taking it over',
        '',
        'Plan: 1 to create, 1 to update, 0 to adopt, 0 to delete, 1 unchanged; 1 refused, 0 waiting, 0 unknown.',
        '',
      ].join('\n'),
    );
  });

  it('text: control characters from a file or the API are escaped', () => {
    const out = renderPlan([
      entry('refuse', { reason: 'APIRejected', message: 'bad\u001b[2Jname\nforged line' }),
    ]);
    expect(out.includes('\u001b')).toBe(false);
    expect(out).toContain('bad\\x1b[2Jname\\x0aforged line');
  });

  it('json: one entry per object with kind, namespace, name, action, reason, message, body or diff; stable', () => {
    const doc = JSON.parse(renderPlanJson(plan, ['a note']));
    expect(doc).toEqual({
      kind: 'EdgePlan',
      version: 1,
      exitCode: 1,
      summary: { create: 1, update: 1, adopt: 0, delete: 0, nothing: 1, refuse: 1, wait: 0, error: 0 },
      objects: [
        { kind: 'IPPolicy', namespace: 'team', name: 'corp', action: 'nothing', id: 'ipp_1' },
        {
          kind: 'IPPolicy',
          namespace: 'team',
          name: 'corp',
          action: 'update',
          id: 'ipp_1',
          diff: [{ field: 'description', was: 'a', will: 'b' }],
        },
        {
          kind: 'IPPolicyRule',
          namespace: 'team',
          name: 'office',
          action: 'create',
          body: { cidr: '192.0.2.0/24', ip_policy_id: '<id of IPPolicy/corp>' },
        },
        {
          kind: 'IPPolicy',
          namespace: 'team',
          name: 'steal',
          action: 'refuse',
          reason: 'OwnedElsewhere',
          message: 'ipp_9 is managed by an object in another namespace; not taking it over',
        },
      ],
      notes: ['a note'],
    });
    expect(renderPlanJson(plan, ['a note'])).toBe(renderPlanJson(plan, ['a note']));
  });
});

/** A cluster that answers GET and LIST only, from these objects (by plural), refusing some reads (403). */
function fakeKube(objects: Record<string, KubeObject[]>, forbidden: string[] = []) {
  const calls: string[] = [];
  const at = (r: ResourcePath, ns?: string, name?: string) => `${r.plural}/${ns ?? ''}/${name ?? ''}`;
  const kube = {
    server: 'https://fake',
    calls,
    async get(r: ResourcePath, ns: string | undefined, name: string) {
      calls.push(`GET ${at(r, ns, name)}`);
      if (forbidden.includes(at(r, ns, name))) throw new KubeError(403, 'forbidden');
      const o = (objects[r.plural] ?? []).find(
        (x) => x.metadata.name === name && x.metadata.namespace === ns,
      );
      if (!o) throw new KubeError(404, 'not found');
      return o;
    },
    async list(r: ResourcePath, ns?: string) {
      calls.push(`LIST ${at(r, ns)}`);
      return {
        metadata: { resourceVersion: '1' },
        items: (objects[r.plural] ?? []).filter((x) => !ns || x.metadata.namespace === ns),
      };
    },
  };
  return kube;
}

const policy = (ns: string, name: string, more: Partial<KubeObject> = {}): KubeObject => ({
  apiVersion: 'edge.tunnel.dev/v1alpha1',
  kind: 'IPPolicy',
  metadata: { name, namespace: ns, uid: `uid-${name}`, ...more.metadata },
  spec: { ...more.spec },
  ...(more.status && { status: more.status }),
});
const ruleOf = (name: string, policyName: string): KubeObject => ({
  apiVersion: 'edge.tunnel.dev/v1alpha1',
  kind: 'IPPolicyRule',
  metadata: { name, namespace: 'team' },
  spec: { ipPolicyRef: { name: policyName }, cidr: '192.0.2.0/24', action: 'allow' },
});

describe('preview, against a cluster that only answers reads', () => {
  const installation = (client: () => EdgeClient) => ({
    enabled: true,
    adoptFrom: [],
    namespace: 'edge-system',
    url: 'http://127.0.0.1:9',
    perMinute: 120,
    client,
  });

  it('an object of an account whose key Secret the caller may not read: refused KeySecretForbidden, exit 1, and nothing but reads', async () => {
    const kube = fakeKube(
      {
        edgeaccounts: [
          {
            apiVersion: 'edge.tunnel.dev/v1alpha1',
            kind: 'EdgeAccount',
            metadata: { name: 'team-key', namespace: 'team' },
            spec: { apiKeySecretRef: { name: 'edge-key', key: 'key' } },
          },
        ],
      },
      ['secrets/team/edge-key'],
    );
    const { entries } = await preview({
      kube: kube as unknown as Kube,
      objects: [policy('team', 'corp', { spec: { accountRef: { kind: 'EdgeAccount', name: 'team-key' } } })],
      clusterId: 'c1',
      sharedNamespaces: [],
      installation: installation(() => {
        throw new Error('the installation account is not this object’s');
      }),
    });
    expect(entries).toEqual([
      {
        kind: 'IPPolicy',
        namespace: 'team',
        name: 'corp',
        action: 'refuse',
        account: 'EdgeAccount/team/team-key',
        reason: 'KeySecretForbidden',
        message:
          "EdgeAccount team/team-key: Secret team/edge-key, key key: you may not read it (edgectl plan reads an account's key with your own Kubernetes rights)",
      },
    ]);
    expect(exitCodeOf(entries)).toBe(1);
    expect(kube.calls.every((c) => /^(GET|LIST) /.test(c))).toBe(true);
  });

  it('a reference to an object the files create shows its placeholder; to one that would be refused, the referrer waits', async () => {
    const kube = fakeKube({
      ippolicies: [policy('other', 'theirs', { status: { id: 'ipp_theirs0000' } })],
    });
    const api = createClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k', rateLimitPerMinute: 120 });
    const { entries } = await preview({
      kube: kube as unknown as Kube,
      objects: [
        policy('team', 'bad', {
          metadata: { name: 'bad', annotations: { [ID_ANNOTATION]: 'ipp_theirs0000' } },
        }),
        ruleOf('r-bad', 'bad'),
        policy('team', 'good'),
        ruleOf('r-good', 'good'),
      ],
      clusterId: 'c1',
      sharedNamespaces: [],
      installation: installation(() => api),
    });
    expect(entries.map((e) => [e.name, e.action, e.reason])).toEqual([
      ['bad', 'refuse', 'OwnedElsewhere'],
      ['r-bad', 'wait', 'WaitingForReference'],
      ['good', 'create', undefined],
      ['r-good', 'create', undefined],
    ]);
    expect(entries[3]!.body).toMatchObject({ ip_policy_id: '<id of IPPolicy/good>' });
    expect(exitCodeOf(entries)).toBe(1);
  });
});

describe('preview: an adoption by id annotation', () => {
  it('one GET for the id; a rule of the files referencing the adopted policy gets its id', async () => {
    const gets: string[] = [];
    const api = {
      ipPolicies: {
        get: async (id: string) => {
          gets.push(id);
          return { id, uri: `https://api/ip_policies/${id}`, description: 'made by hand', metadata: '' };
        },
      },
      close: async () => {},
    } as unknown as EdgeClient;
    const { entries } = await preview({
      kube: fakeKube({}) as unknown as Kube,
      objects: [
        policy('team', 'outside', {
          metadata: { name: 'outside', annotations: { [ID_ANNOTATION]: 'ipp_outside000' } },
          spec: { description: 'made by hand' },
        }),
        ruleOf('r-outside', 'outside'),
      ],
      clusterId: 'c1',
      sharedNamespaces: [],
      installation: {
        enabled: true,
        adoptFrom: ['team'],
        namespace: 'edge-system',
        perMinute: 120,
        client: () => api,
      },
    });
    expect(entries.map((e) => [e.name, e.action, e.id])).toEqual([
      ['outside', 'adopt', 'ipp_outside000'],
      ['r-outside', 'create', undefined],
    ]);
    // equal to the spec but for the owner marker, written with the first real write: no change
    expect(entries[0]!.changes).toEqual([]);
    expect(entries[1]!.body).toMatchObject({ ip_policy_id: 'ipp_outside000' });
    expect(gets).toEqual(['ipp_outside000']);
  });
});
