// CRD objects generated from the bindings' zod schemas.
import { z } from 'zod';
import type { AnyBinding } from '../runtime/bindings/binding.ts';
import { ACCOUNT_REF_RULE, AccountRef } from './accounts.ts';
import { cel, commonSpec, commonStatus, crdEnvelope, structural } from './crd-schema.ts';

type Json = Record<string, unknown>;

// .extend() returns a new schema: carry the spec-level CEL rules over to it.
// Every kind names its account the same way: accountRef is the engine's, like deletionPolicy.
export const specSchema = (b: AnyBinding) =>
  cel(
    b.spec
      .extend({ ...commonSpec, accountRef: AccountRef.optional() })
      .meta(z.globalRegistry.get(b.spec) ?? {}),
    ACCOUNT_REF_RULE,
  );
export const statusSchema = (b: AnyBinding) => z.object({ ...commonStatus, ...(b.status?.shape ?? {}) });

export function crdFor(b: AnyBinding): Json {
  const spec = structural(z.toJSONSchema(specSchema(b), { target: 'openapi-3.0', io: 'input' })) as Json;
  const status = structural(z.toJSONSchema(statusSchema(b), { target: 'openapi-3.0', io: 'output' })) as Json;
  (spec as Json).description = 'desired state of the remote resource';
  (status as Json).description = 'observed state, written by the operator';
  return crdEnvelope({
    kind: b.kind,
    plural: b.plural,
    shortNames: b.shortNames,
    scope: 'Namespaced',
    description: b.description,
    spec,
    status,
    columns: [
      { name: 'ID', type: 'string', jsonPath: '.status.id', description: 'remote resource id' },
      ...(b.columns ?? []),
      ...(b.tunnels
        ? [
            {
              name: 'Tunnels',
              type: 'integer',
              jsonPath: '.status.tunnelsOnline.count',
              description: 'online tunnels serving it now',
            },
          ]
        : []),
      { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
      {
        name: 'Reason',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
        priority: 1,
      },
      {
        name: 'Account',
        type: 'string',
        jsonPath: '.status.account',
        priority: 1,
        description: 'the API account holding the remote resource',
      },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  });
}
