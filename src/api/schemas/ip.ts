import { z } from 'zod';
import { RESTRICTION_TYPES, RULE_ACTIONS } from '../limits.ts';
import { OBJECT_RULES, RULES } from '../rules.ts';
import { checked, crossChecked, describe, idCoded, Ref, resourceIn, resourceOut } from './common.ts';

const Cidr = describe(
  checked(RULES.cidr),
  'an IP address or range in CIDR notation; IPv4 and IPv6 supported',
);

export const IPPolicy = z.object({ ...resourceOut });
export const IPPolicyCreate = z.strictObject({ ...resourceIn });
export const IPPolicyUpdate = z.strictObject({ ...resourceIn });

export const IPPolicyRule = z.object({
  ...resourceOut,
  cidr: z.string(),
  ip_policy: Ref,
  action: z.enum(RULE_ACTIONS),
});
// a single address has its mask (/32, /128) and a range its lowest address, as the public API asks
export const IPPolicyRuleCreate = crossChecked(
  z.strictObject({
    ...resourceIn,
    cidr: Cidr,
    ip_policy_id: idCoded('ERR_INVALID_RULE_POLICY_ID', 'ipPolicy'),
    action: describe(z.enum(RULE_ACTIONS), 'allow or deny traffic from the cidr'),
  }),
  OBJECT_RULES.cidrMask,
  OBJECT_RULES.cidrCanonical,
);
export const IPPolicyRuleUpdate = crossChecked(
  z.strictObject({ ...resourceIn, cidr: Cidr.optional() }),
  OBJECT_RULES.cidrMask,
  OBJECT_RULES.cidrCanonical,
);

export const IPRestriction = z.object({
  ...resourceOut,
  enforced: z.boolean(),
  type: z.enum(RESTRICTION_TYPES),
  ip_policies: z.array(Ref),
});
const PolicyIds = z
  .array(idCoded('ERR_INVALID_IP_POLICY_ID', 'ipPolicy'))
  .min(1, { message: 'must name at least one IP policy' });
export const IPRestrictionCreate = z.strictObject({
  ...resourceIn,
  enforced: describe(z.boolean(), 'true: enforced; false: only warnings are issued').optional(),
  type: describe(z.enum(RESTRICTION_TYPES), 'what traffic is restricted: dashboard, api, agent or endpoints'),
  ip_policy_ids: PolicyIds,
});
export const IPRestrictionUpdate = z.strictObject({
  ...resourceIn,
  enforced: z.boolean().optional(),
  ip_policy_ids: PolicyIds.optional(),
});

export type IPPolicy = z.infer<typeof IPPolicy>;
export type IPPolicyRule = z.infer<typeof IPPolicyRule>;
export type IPRestriction = z.infer<typeof IPRestriction>;
