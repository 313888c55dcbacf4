import { z } from 'zod';
import type { TunnelGroupBackend as Remote } from '../../api/schemas/backends.ts';
import { crudApi, defineBinding } from '../runtime/binding.ts';
import { doc } from './crd-schema.ts';

const Spec = z.object({
  labels: doc(z.record(z.string(), z.string()), 'labels of the tunnels this backend serves (all must match)'),
});
type Spec = z.infer<typeof Spec>;

export const TunnelGroupBackend = defineBinding<Spec, Remote, { labels: Record<string, string> }>({
  kind: 'TunnelGroupBackend',
  plural: 'tunnelgroupbackends',
  shortNames: ['tgb'],
  description: 'A backend made of the online tunnels whose labels match.',
  spec: Spec,
  status: z.object({
    tunnels: doc(
      z.array(z.object({ id: z.string(), uri: z.string() })),
      'tunnels matching now (refreshed on resync)',
    ).optional(),
  }),
  desired: (s) => ({ labels: s.labels }),
  observe: (r) => ({ labels: r.labels ?? {} }),
  updatable: ['labels'],
  api: crudApi((c) => c.tunnelGroupBackends),
  statusOf: (r) => ({ tunnels: r.tunnels }),
  exportSpec: (r) => ({ labels: r.labels ?? {} }),
});
