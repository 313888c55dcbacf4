// CRD objects generated from the bindings' zod schemas.
import { z } from 'zod';
import type { AnyBinding } from '../runtime/binding.ts';
import { commonSpec, commonStatus, GROUP, VERSION } from './crd-schema.ts';

type Json = Record<string, unknown>;

/** Makes z.toJSONSchema output a Kubernetes structural schema. */
function structural(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(structural);
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    if (k === '$schema' || k === 'propertyNames') continue;
    if (k === 'additionalProperties' && typeof v === 'boolean') continue;
    if (k === 'x-kubernetes-validations') out[k] = v;
    else out[k] = structural(v);
  }
  return out;
}

// .extend() returns a new schema: carry the spec-level CEL rules over to it.
export const specSchema = (b: AnyBinding) =>
  b.spec.extend(commonSpec).meta(z.globalRegistry.get(b.spec) ?? {});
export const statusSchema = (b: AnyBinding) => z.object({ ...commonStatus, ...(b.status?.shape ?? {}) });

export function crdFor(b: AnyBinding): Json {
  const lower = b.kind.toLowerCase();
  const spec = structural(z.toJSONSchema(specSchema(b), { target: 'openapi-3.0', io: 'input' })) as Json;
  const status = structural(z.toJSONSchema(statusSchema(b), { target: 'openapi-3.0', io: 'output' })) as Json;
  (spec as Json).description = 'desired state of the remote resource';
  (status as Json).description = 'observed state, written by the operator';
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${b.plural}.${GROUP}`, labels: { 'app.kubernetes.io/part-of': 'edge-operator' } },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: {
        kind: b.kind,
        listKind: `${b.kind}List`,
        plural: b.plural,
        singular: lower,
        shortNames: b.shortNames,
        categories: ['edge'],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
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
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              description: b.description,
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec,
                status,
              },
            },
          },
        },
      ],
    },
  };
}
