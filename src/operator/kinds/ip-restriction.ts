import { z } from 'zod';
import { RESTRICTION_TYPES } from '../../api/limits.ts';
import type { IPRestriction as Remote } from '../../api/schemas/ip.ts';
import { crudApi, defineBinding } from '../runtime/binding.ts';
import { cel, doc, immutable } from './crd-schema.ts';
import { PolicyChoice, policiesRule, policyRefs } from './shared-fields.ts';

const Spec = cel(
  z.object({
    type: doc(
      immutable(z.enum(RESTRICTION_TYPES), 'type'),
      'what traffic is restricted: dashboard, api, agent or endpoints (immutable)',
    ),
    enforced: doc(z.boolean().default(false), 'true: enforced; false: only warnings are issued'),
    ...PolicyChoice,
  }),
  policiesRule('at least one IP policy is required (ipPolicyRefs and/or ipPolicyIDs)'),
);
type Spec = z.infer<typeof Spec>;
type Desired = { type: Remote['type']; enforced: boolean; ip_policy_ids: string[] };

export const IPRestriction = defineBinding<Spec, Remote, Desired>({
  kind: 'IPRestriction',
  plural: 'iprestrictions',
  shortNames: ['ipx'],
  description: 'Restricts dashboard, API, agent or endpoint traffic to the IP policies it names.',
  spec: Spec,
  status: z.object({ ipPolicyIDs: z.array(z.string()).optional() }),
  columns: [
    { name: 'Type', type: 'string', jsonPath: '.spec.type' },
    { name: 'Enforced', type: 'boolean', jsonPath: '.spec.enforced' },
  ],
  references: (s) =>
    (s.ipPolicyRefs ?? []).map((r, i) => ({
      path: `spec.ipPolicyRefs[${i}]`,
      kind: 'IPPolicy',
      name: r.name,
    })),
  desired: (s, ref) => ({
    type: s.type,
    enforced: s.enforced ?? false,
    // the API keeps order but it carries no meaning: compare sorted, so no write is spent on it
    ip_policy_ids: [
      ...new Set([...(s.ipPolicyRefs ?? []).map((r) => ref('IPPolicy', r.name)), ...(s.ipPolicyIDs ?? [])]),
    ].sort(),
  }),
  observe: (r) => ({
    type: r.type,
    enforced: r.enforced,
    ip_policy_ids: r.ip_policies.map((p) => p.id).sort(),
  }),
  updatable: ['enforced', 'ip_policy_ids'],
  api: crudApi((c) => c.ipRestrictions),
  statusOf: (r) => ({ ipPolicyIDs: r.ip_policies.map((p) => p.id) }),
  exportSpec: (r, x) => ({ type: r.type, enforced: r.enforced, ...policyRefs(r.ip_policies, x) }),
});
