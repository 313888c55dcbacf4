import { z } from 'zod';
import type { IPPolicy as Remote } from '../../api/schemas/ip.ts';
import { defineBinding } from './binding.ts';

export const IPPolicy = defineBinding<Record<string, never>, Remote, Record<string, never>>({
  kind: 'IPPolicy',
  plural: 'ippolicies',
  shortNames: ['ipp'],
  description:
    'A named set of IP policy rules (IPPolicyRule) that IP restrictions and route modules enforce.',
  spec: z.object({}),
  desired: () => ({}),
  observe: () => ({}),
  updatable: [],
  api: {
    create: (c, body) => c.ipPolicies.create(body),
    get: (c, id) => c.ipPolicies.get(id),
    update: (c, id, patch) => c.ipPolicies.update(id, patch),
    delete: (c, id) => c.ipPolicies.delete(id),
    list: (c) => c.ipPolicies.list(),
  },
});
