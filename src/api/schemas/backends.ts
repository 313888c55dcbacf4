import { z } from 'zod';
import { BACKEND_ID_PREFIXES, WEIGHT_MAX, WEIGHT_MIN } from '../limits.ts';
import { Ref, resourceIn, resourceOut, rule, StringMap } from './common.ts';

export const TunnelGroupBackend = z.object({
  ...resourceOut,
  labels: StringMap.nullable(),
  tunnels: z.array(Ref),
});
export const TunnelGroupBackendCreate = z.strictObject({ ...resourceIn, labels: StringMap });
export const TunnelGroupBackendUpdate = z.strictObject({ ...resourceIn, labels: StringMap.optional() });

const backendKey = new RegExp(`^(${BACKEND_ID_PREFIXES.join('|')})_[A-Za-z0-9]+$`);
const Weight = rule(
  z.number().int(),
  (n) => n >= WEIGHT_MIN && n <= WEIGHT_MAX,
  `weight must be between ${WEIGHT_MIN} and ${WEIGHT_MAX}`,
  'ERR_WEIGHT_OUT_OF_RANGE',
);
const Weights = z.record(
  rule(
    z.string(),
    (k) => backendKey.test(k),
    `keys must be backend ids (${BACKEND_ID_PREFIXES.map((p) => `${p}_`).join(', ')})`,
    'ERR_INVALID_ID',
  ),
  Weight,
);
export const WeightedBackend = z.object({ ...resourceOut, backends: z.record(z.string(), z.number()) });
export const WeightedBackendCreate = z.strictObject({ ...resourceIn, backends: Weights });
export const WeightedBackendUpdate = z.strictObject({ ...resourceIn, backends: Weights.optional() });

export type TunnelGroupBackend = z.infer<typeof TunnelGroupBackend>;
export type WeightedBackend = z.infer<typeof WeightedBackend>;
