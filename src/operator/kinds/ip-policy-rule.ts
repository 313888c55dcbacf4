import { z } from 'zod';
import { IPPolicyRuleCreate, IPPolicyRuleUpdate, type IPPolicyRule as Remote } from '../../api/schemas/ip.ts';
import { crudApi, defineBinding } from '../runtime/bindings/binding.ts';
import { doc } from './crd-schema.ts';
import { kindSpec } from './kind-spec.ts';
import { refOrIDChoice } from './shared-fields.ts';

const fields = kindSpec(IPPolicyRuleCreate, IPPolicyRuleUpdate, {
  ip_policy_id: {
    replace: refOrIDChoice(
      'IPPolicy',
      'ipPolicy',
      ['ipPolicyRef', 'ipPolicyID'],
      (r) => (r as Remote).ip_policy.id,
      'an IP policy',
    ),
  },
});
type Spec = { cidr: string; action: Remote['action']; ipPolicyRef?: { name: string }; ipPolicyID?: string };
type Desired = { cidr: string; action: Remote['action']; ip_policy_id: string };

export const IPPolicyRule = defineBinding<Spec, Remote, Desired>({
  kind: 'IPPolicyRule',
  plural: 'ippolicyrules',
  shortNames: ['iprule'],
  partOf: 'IPPolicy',
  description: 'An allow or deny rule for a CIDR, in an IP policy.',
  spec: fields.schema,
  status: z.object({ ipPolicyID: doc(z.string(), 'id of the IP policy the rule belongs to').optional() }),
  columns: [
    { name: 'CIDR', type: 'string', jsonPath: '.spec.cidr' },
    { name: 'Action', type: 'string', jsonPath: '.spec.action' },
  ],
  references: (s) => fields.references(s, 'spec'),
  desired: (s, ref) => fields.desired(s, ref) as Desired,
  fromRemote: (r) => ({ cidr: r.cidr, action: r.action, ip_policy_id: r.ip_policy.id }),
  updatable: fields.updatable as (keyof Desired)[],
  conflict: {
    key: (d) => `${d.ip_policy_id} ${d.cidr.toLowerCase()}`,
    what: 'the same CIDR in the same IP policy',
  },
  api: crudApi((c) => c.ipPolicyRules),
  statusOf: (r) => ({ ipPolicyID: r.ip_policy.id }),
  exportSpec: (r, x) => fields.fromWire(r, x),
});
