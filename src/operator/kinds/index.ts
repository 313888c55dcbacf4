import type { AnyBinding } from './binding.ts';
import { IPPolicy } from './ip-policy.ts';
import { IPPolicyRule } from './ip-policy-rule.ts';
import { IPRestriction } from './ip-restriction.ts';

/** Every kind the operator manages. Adding a kind: a binding file, a line here, a test. */
export const BINDINGS: AnyBinding[] = [IPPolicy, IPPolicyRule, IPRestriction];
