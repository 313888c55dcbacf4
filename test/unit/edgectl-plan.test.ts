// edgectl plan's pure part: the engine's decisions described (a create's body, an update's
// fields, a refusal), the exit code of a whole plan, and the text and JSON it prints.
import { describe, expect, it } from 'vitest';
import { renderPlan, renderPlanJson } from '../../src/cli/plan-output.ts';
import { HTTPSEdgeRoute } from '../../src/operator/kinds/https-edge-route.ts';
import { IPPolicy } from '../../src/operator/kinds/ip-policy.ts';
import { IPPolicyRule } from '../../src/operator/kinds/ip-policy-rule.ts';
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
import type { Remote, Wanted } from '../../src/operator/runtime/engine/index.ts';

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
