import { z } from 'zod';
import {
  type TunnelGroupBackend as Remote,
  TunnelGroupBackendCreate,
  TunnelGroupBackendUpdate,
} from '../../api/schemas/backends.ts';
import { crudApi, defineBinding } from '../runtime/bindings/binding.ts';
import { doc } from './crd-schema.ts';
import { kindSpec } from './kind-spec.ts';

// 50 labels, keys of 128 characters, values of 256: 116 KB in the worst case (BODY_BUDGET)
const fields = kindSpec(TunnelGroupBackendCreate, TunnelGroupBackendUpdate, {
  labels: { max: 50, keyMax: 128, itemMax: 256 },
});
type Spec = { labels: Record<string, string> };

export const TunnelGroupBackend = defineBinding<Spec, Remote, { labels: Record<string, string> }>({
  kind: 'TunnelGroupBackend',
  plural: 'tunnelgroupbackends',
  shortNames: ['tgb'],
  tunnels: 'serves',
  description: 'A backend made of the online tunnels whose labels match.',
  spec: fields.schema,
  status: z.object({
    tunnels: doc(
      z.array(
        z.object({
          id: doc(z.string(), 'id of the tunnel'),
          uri: doc(z.string(), 'API address of the tunnel'),
        }),
      ),
      'tunnels matching now (refreshed on resync)',
    ).optional(),
  }),
  desired: (s) => ({ labels: s.labels }),
  fromRemote: (r) => ({ labels: r.labels ?? {} }),
  updatable: ['labels'],
  api: crudApi((c) => c.tunnelGroupBackends),
  statusOf: (r) => ({ tunnels: r.tunnels }),
  exportSpec: (r) => ({ labels: r.labels ?? {} }),
});
