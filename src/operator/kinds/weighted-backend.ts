import { z } from 'zod';
import { type WeightedBackend as Remote, Weight } from '../../api/schemas/backends.ts';
import { crudApi, defineBinding } from '../runtime/bindings/binding.ts';
import { cel, doc } from './crd-schema.ts';
import { crdOf } from './derive.ts';
import { BackendID, BackendRef, backendIdsOf, backendRefOrID } from './shared-fields.ts';

const Entry = cel(
  z.object({
    backendRef: BackendRef.optional(),
    backendID: doc(BackendID, 'id of a backend managed elsewhere').optional(),
    weight: crdOf(Weight, 'weight') as z.ZodNumber,
  }),
  {
    rule: 'has(self.backendRef) != has(self.backendID)',
    message: 'exactly one of backendRef or backendID must be set',
  },
);
const Spec = z.object({
  backends: doc(z.array(Entry).min(1).max(100), 'child backends and their weights'),
});
type Spec = z.infer<typeof Spec>;

export const WeightedBackend = defineBinding<Spec, Remote, { backends: Record<string, number> }>({
  kind: 'WeightedBackend',
  plural: 'weightedbackends',
  shortNames: ['wb'],
  tunnels: 'through',
  tunnelIds: backendIdsOf,
  description: 'A backend that spreads traffic over other backends by weight.',
  spec: Spec,
  status: z.object({
    backends: doc(z.record(z.string(), z.number()), 'resolved backend id -> weight').optional(),
  }),
  references: (s) =>
    s.backends.flatMap((b, i) =>
      b.backendRef
        ? [{ path: `spec.backends[${i}].backendRef`, kind: b.backendRef.kind, name: b.backendRef.name }]
        : [],
    ),
  desired: (s, ref) => ({
    backends: Object.fromEntries(
      s.backends.map((b) => [b.backendID ?? ref(b.backendRef!.kind, b.backendRef!.name), b.weight]),
    ),
  }),
  fromRemote: (r) => ({ backends: r.backends }),
  updatable: ['backends'],
  api: crudApi((c) => c.weightedBackends),
  statusOf: (r) => ({ backends: r.backends }),
  exportSpec: (r, x) => ({
    backends: Object.entries(r.backends).map(([id, weight]) => ({ ...backendRefOrID(x, id), weight })),
  }),
});
