import { z } from 'zod';
import {
  IPRestrictionCreate,
  IPRestrictionUpdate,
  type IPRestriction as Remote,
} from '../../api/schemas/ip.ts';
import { crudApi, defineBinding } from '../runtime/bindings/binding.ts';
import { doc } from './crd-schema.ts';
import { kindSpec } from './kind-spec.ts';
import { policyChoice } from './shared-fields.ts';

const fields = kindSpec(IPRestrictionCreate, IPRestrictionUpdate, {
  enforced: { default: false },
  ip_policy_ids: {
    replace: policyChoice('at least one IP policy is required (ipPolicyRefs and/or ipPolicyIDs)'),
  },
});
type Spec = {
  type: Remote['type'];
  enforced?: boolean;
  ipPolicyRefs?: { name: string }[];
  ipPolicyIDs?: string[];
};
type Desired = { type: Remote['type']; enforced: boolean; ip_policy_ids: string[] };

export const IPRestriction = defineBinding<Spec, Remote, Desired>({
  kind: 'IPRestriction',
  plural: 'iprestrictions',
  shortNames: ['ipx'],
  description: 'Restricts dashboard, API, agent or endpoint traffic to the IP policies it names.',
  spec: fields.schema,
  status: z.object({
    ipPolicyIDs: doc(z.array(z.string()), 'ids of the IP policies the restriction enforces').optional(),
  }),
  columns: [
    { name: 'Type', type: 'string', jsonPath: '.spec.type' },
    { name: 'Enforced', type: 'boolean', jsonPath: '.spec.enforced' },
  ],
  references: (s) => fields.references(s, 'spec'),
  desired: (s, ref) => {
    const d = fields.desired(s, ref) as Desired;
    // the API keeps order but it carries no meaning: compare sorted, so no write is spent on it
    return { ...d, enforced: d.enforced ?? false, ip_policy_ids: [...new Set(d.ip_policy_ids)].sort() };
  },
  fromRemote: (r) => ({
    type: r.type,
    enforced: r.enforced,
    ip_policy_ids: r.ip_policies.map((p) => p.id).sort(),
  }),
  updatable: fields.updatable as (keyof Desired)[],
  conflict: { key: (d) => d.type, what: 'an IP restriction of the same type' },
  api: crudApi((c) => c.ipRestrictions),
  statusOf: (r) => ({ ipPolicyIDs: r.ip_policies.map((p) => p.id) }),
  // enforced is kept even when false: it is what the restriction does
  exportSpec: (r, x) => ({ ...fields.fromWire(r, x), enforced: r.enforced }),
});
