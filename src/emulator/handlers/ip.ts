// IP policies, their rules and IP restrictions (src/api/schemas/ip.ts).
import { ID_PREFIX } from '../../api/limits.ts';
import { canonicalCidr } from '../../api/rules.ts';
import { type Ctx, ref } from '../context.ts';
import { refuse } from '../errors.ts';
import { mustExist } from './common.ts';
import type { Family } from './crud.ts';

const policiesExist = (ctx: Ctx, ids: string[]) => {
  for (const id of ids)
    mustExist(ctx, 'ipPolicies', id, () =>
      refuse('ERR_IP_RESTRICTION_POLICY_NOT_FOUND', { POLICY_ID: id }, 'ip_policy_ids'),
    );
};
/** The same CIDR, however it is written (IPv6 in any case or form). */
const sameCidr = (a: string, b: string) =>
  (canonicalCidr(a) ?? a.toLowerCase()) === (canonicalCidr(b) ?? b.toLowerCase());
/** A second rule with this CIDR in one policy (ERR_NGROK_1408). */
function cidrFree(ctx: Ctx, policy: string, cidr: string, self?: string): void {
  const other = ctx.store
    .all('ipPolicyRules')
    .find((r) => r.ip_policy_id === policy && r.id !== self && sameCidr(r.cidr as string, cidr));
  if (other) throw refuse('ERR_IP_POLICY_RULE_CIDR_EXISTS', { CIDR: cidr }, `rule ${other.id} of ${policy}`);
}

const ipPolicies: Family = {
  path: '/ip_policies',
  coll: 'ipPolicies',
  prefix: ID_PREFIX.ipPolicy,
  listKey: 'ip_policies',
  what: 'IP policy',
  create: () => ({}),
  emptyUpdate: 'ERR_IP_POLICY_UPDATE_EMPTY',
  // As the public API: refused while an IP restriction uses the policy; its rules go with
  // it; route modules that name it keep the id and act as if it had no rules.
  beforeDelete: (ctx, rec) => {
    const restrictions = ctx.store
      .all('ipRestrictions')
      .filter((r) => (r.ip_policy_ids as string[]).includes(rec.id));
    if (restrictions.length) {
      throw refuse('ERR_IP_POLICY_IN_USE', {
        POLICYID: rec.id,
        RESTRICTIONIDS: restrictions.map((r) => r.id).join(', '),
      });
    }
  },
  afterDelete: (ctx, rec) => {
    for (const r of ctx.store.all('ipPolicyRules'))
      if (r.ip_policy_id === rec.id) ctx.store.delete('ipPolicyRules', r.id);
  },
};

const ipPolicyRules: Family = {
  path: '/ip_policy_rules',
  coll: 'ipPolicyRules',
  prefix: ID_PREFIX.ipPolicyRule,
  listKey: 'ip_policy_rules',
  what: 'IP policy rule',
  create: (ctx, b) => {
    const policy = b.ip_policy_id as string;
    mustExist(ctx, 'ipPolicies', policy, () =>
      refuse('ERR_REFERENCE_NOT_FOUND', { ID: policy }, 'ip_policy_id'),
    );
    cidrFree(ctx, policy, b.cidr as string);
    return { cidr: b.cidr, ip_policy_id: b.ip_policy_id, action: b.action };
  },
  emptyUpdate: 'ERR_IP_POLICY_RULE_UPDATE_EMPTY',
  update: (ctx, rec, b) => {
    if (b.cidr !== undefined) {
      cidrFree(ctx, rec.ip_policy_id as string, b.cidr as string, rec.id);
      rec.cidr = b.cidr;
    }
  },
  render: (ctx, rec) => ({ ip_policy_id: undefined, ip_policy: ref(ctx, rec.ip_policy_id as string) }),
  // the only rule of a policy a dashboard restriction uses would lock everyone out
  beforeDelete: (ctx, rec) => {
    const policy = rec.ip_policy_id as string;
    const others = ctx.store.all('ipPolicyRules').filter((r) => r.ip_policy_id === policy && r.id !== rec.id);
    const dashboard = ctx.store
      .all('ipRestrictions')
      .find((r) => r.type === 'dashboard' && (r.ip_policy_ids as string[]).includes(policy));
    if (!others.length && dashboard)
      throw refuse(
        'ERR_ONLY_RULE_IN_USE',
        { RULEID: rec.id, RESTRICTIONID: dashboard.id },
        `IP policy ${policy}`,
      );
  },
};

const ipRestrictions: Family = {
  path: '/ip_restrictions',
  coll: 'ipRestrictions',
  prefix: ID_PREFIX.ipRestriction,
  listKey: 'ip_restrictions',
  what: 'IP restriction',
  create: (ctx, b) => {
    policiesExist(ctx, b.ip_policy_ids as string[]);
    const same = ctx.store.all('ipRestrictions').find((r) => r.type === b.type);
    if (same)
      throw refuse('ERR_IP_RESTRICTION_TYPE_EXISTS', { TYPE: b.type as string }, `IP restriction ${same.id}`);
    return { enforced: b.enforced ?? false, type: b.type, ip_policy_ids: b.ip_policy_ids };
  },
  update: (ctx, rec, b) => {
    if (b.ip_policy_ids !== undefined) {
      policiesExist(ctx, b.ip_policy_ids as string[]);
      rec.ip_policy_ids = b.ip_policy_ids;
    }
    if (b.enforced !== undefined) rec.enforced = b.enforced;
  },
  render: (ctx, rec) => ({
    ip_policy_ids: undefined,
    ip_policies: (rec.ip_policy_ids as string[]).map((id) => ref(ctx, id)),
  }),
};

/** By the operations table's group. */
export const IP_FAMILIES = { ipPolicies, ipPolicyRules, ipRestrictions };
