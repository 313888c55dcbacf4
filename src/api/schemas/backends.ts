import { z } from 'zod';
import { WEIGHT_MAX, WEIGHT_MIN } from '../limits.ts';
import { OBJECT_RULES } from '../rules.ts';
import {
  crossChecked,
  describe,
  idCoded,
  Ref,
  ranged,
  resourceIn,
  resourceOut,
  StringMap,
} from './common.ts';

export const TunnelGroupBackend = z.object({
  ...resourceOut,
  labels: StringMap.nullable(),
  tunnels: z.array(Ref),
});
export const TunnelGroupBackendCreate = crossChecked(
  z.strictObject({
    ...resourceIn,
    labels: describe(StringMap, 'labels of the tunnels this backend serves (all must match)'),
  }),
  OBJECT_RULES.labelsWithoutEquals,
);
export const TunnelGroupBackendUpdate = crossChecked(
  z.strictObject({ ...resourceIn, labels: StringMap.optional() }),
  OBJECT_RULES.labelsWithoutEquals,
);

export const Weight = describe(
  ranged(
    z.number().int(),
    { min: WEIGHT_MIN, max: WEIGHT_MAX },
    `weight must be between ${WEIGHT_MIN} and ${WEIGHT_MAX}`,
    'ERR_WEIGHT_OUT_OF_RANGE',
  ),
  `relative weight, ${WEIGHT_MIN}..${WEIGHT_MAX}`,
);
const Weights = z.record(
  idCoded('ERR_INVALID_WEIGHTED_BACKEND_KEY', 'tunnelGroupBackend', 'weightedBackend', 'httpResponseBackend'),
  Weight,
);
export const WeightedBackend = z.object({ ...resourceOut, backends: z.record(z.string(), z.number()) });
export const WeightedBackendCreate = z.strictObject({ ...resourceIn, backends: Weights });
export const WeightedBackendUpdate = z.strictObject({ ...resourceIn, backends: Weights.optional() });

export type TunnelGroupBackend = z.infer<typeof TunnelGroupBackend>;
export type WeightedBackend = z.infer<typeof WeightedBackend>;
