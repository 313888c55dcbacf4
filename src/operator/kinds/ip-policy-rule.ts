import { z } from 'zod';
import { RULE_ACTIONS } from '../../api/limits.ts';
import { idRule, RULES } from '../../api/rules.ts';
import type { IPPolicyRule as Remote } from '../../api/schemas/ip.ts';
import { crudApi, defineBinding, refOrID } from '../runtime/binding.ts';
import { cel, doc, exactlyOne, immutable, localRef, ruled } from './crd-schema.ts';

const Spec = cel(
  z.object({
    cidr: doc(ruled(RULES.cidr, 'cidr'), 'an IP address or range in CIDR notation; IPv4 and IPv6 supported'),
    action: doc(immutable(z.enum(RULE_ACTIONS), 'action'), 'allow or deny traffic from the cidr (immutable)'),
    ipPolicyRef: immutable(localRef('IPPolicy'), 'ipPolicyRef').optional(),
    ipPolicyID: doc(
      immutable(ruled(idRule('ipPolicy'), 'ipPolicyID'), 'ipPolicyID'),
      'id of an IP policy managed elsewhere (immutable)',
    ).optional(),
  }),
  ...exactlyOne('ipPolicyRef', 'ipPolicyID'),
);
type Spec = z.infer<typeof Spec>;
type Desired = { cidr: string; action: Remote['action']; ip_policy_id: string };

export const IPPolicyRule = defineBinding<Spec, Remote, Desired>({
  kind: 'IPPolicyRule',
  plural: 'ippolicyrules',
  shortNames: ['iprule'],
  description: 'An allow or deny rule for a CIDR, in an IP policy.',
  spec: Spec,
  status: z.object({ ipPolicyID: z.string().optional() }),
  columns: [
    { name: 'CIDR', type: 'string', jsonPath: '.spec.cidr' },
    { name: 'Action', type: 'string', jsonPath: '.spec.action' },
  ],
  references: (s) =>
    s.ipPolicyRef ? [{ path: 'spec.ipPolicyRef', kind: 'IPPolicy', name: s.ipPolicyRef.name }] : [],
  desired: (s, ref) => ({
    cidr: s.cidr,
    action: s.action,
    ip_policy_id: s.ipPolicyID ?? ref('IPPolicy', s.ipPolicyRef!.name),
  }),
  observe: (r) => ({ cidr: r.cidr, action: r.action, ip_policy_id: r.ip_policy.id }),
  updatable: ['cidr'],
  api: crudApi((c) => c.ipPolicyRules),
  statusOf: (r) => ({ ipPolicyID: r.ip_policy.id }),
  exportSpec: (r, x) => ({
    cidr: r.cidr,
    action: r.action,
    ...refOrID(x, r.ip_policy.id, 'ipPolicyRef', 'ipPolicyID'),
  }),
});
