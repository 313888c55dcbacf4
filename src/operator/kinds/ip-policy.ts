import { z } from 'zod';
import type { IPPolicy as Remote } from '../../api/schemas/ip.ts';
import { crudApi, defineBinding } from '../runtime/bindings/binding.ts';

export const IPPolicy = defineBinding<Record<string, never>, Remote, Record<string, never>>({
  kind: 'IPPolicy',
  plural: 'ippolicies',
  shortNames: ['ipp'],
  description:
    'A named set of IP policy rules (IPPolicyRule) that IP restrictions and route modules enforce.',
  spec: z.object({}),
  desired: () => ({}),
  fromRemote: () => ({}),
  updatable: [],
  api: crudApi((c) => c.ipPolicies),
  exportSpec: () => ({}),
});
