// Building blocks for CRD schemas in zod: the common fields, references, immutability
// and byte limits as CEL, so admission says what the API would say, earlier.
import { z } from 'zod';
import { DESCRIPTION_MAX_BYTES } from '../../api/limits.ts';
import type { Rule as ValueRule } from '../../api/rules.ts';

export {
  CREATE_PENDING_ANNOTATION,
  FINALIZER,
  FORCE_DELETE_ANNOTATION,
  GROUP,
  ID_ANNOTATION,
  VERSION,
} from '../runtime/constants.ts';

import { GROUP as G, VERSION as V } from '../runtime/constants.ts';

/** The remote metadata field also carries the owner marker, so users get this much of it. */
export const USER_METADATA_MAX_BYTES = 3072;

type Json = Record<string, unknown>;
/** Makes z.toJSONSchema output a Kubernetes structural schema. */
export function structural(node: unknown): unknown {
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

type Rule = {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
};
export const cel = <T extends z.ZodType>(schema: T, ...rules: Rule[]): T => {
  const prev = (z.globalRegistry.get(schema)?.['x-kubernetes-validations'] as Rule[] | undefined) ?? [];
  return schema.meta({
    ...(z.globalRegistry.get(schema) ?? {}),
    'x-kubernetes-validations': [...prev, ...rules],
  }) as T;
};
export const doc = <T extends z.ZodType>(schema: T, description: string): T =>
  schema.meta({ ...(z.globalRegistry.get(schema) ?? {}), description }) as T;

/** A string limited in bytes (the API's unit), checked by CEL; maxLength bounds CEL's cost. */
export const bytesLimited = (max: number, what: string) =>
  cel(z.string().max(max), {
    rule: `bytes(self).size() <= ${max}`,
    message: `${what} must be at most ${max} bytes`,
  });

/**
 * A list of strings (or of objects keyed by `mapKey`) without repeats, enforced by the API
 * server's own list semantics ("Duplicate value"), which costs no CEL budget.
 */
export const noRepeats = <T extends z.ZodArray>(schema: T, mapKey?: string): T =>
  schema.meta({
    ...(z.globalRegistry.get(schema) ?? {}),
    'x-kubernetes-list-type': mapKey ? 'map' : 'set',
    ...(mapKey ? { 'x-kubernetes-list-map-keys': [mapKey] } : {}),
  }) as T;

/**
 * A string held to one of the spec's rules (src/api/rules.ts): admission checks its pattern
 * or CEL, and the zod side (tests, export) runs the API's own check too.
 */
export const ruled = (r: ValueRule, field: string) => {
  const message = `${field} must ${r.must}`;
  const s = z.string().max(r.maxLength).refine(r.test, message);
  return r.pattern ? s.regex(new RegExp(r.pattern), message) : cel(s, { rule: r.cel!, message });
};

/**
 * A map of strings, its keys and values held to rules (patterns) by CEL: OpenAPI has no pattern
 * or length for property names, and CEL names the rule a value breaks. CEL's cost needs the map,
 * its keys and its values bounded.
 */
export function ruledMap(
  at: string,
  b: { keyRule?: ValueRule; valueRule?: ValueRule; keyMax: number; valueMax: number; maxProperties: number },
) {
  const { keyRule, valueRule, keyMax, valueMax, maxProperties } = b;
  const key = keyRule ? ruled({ ...keyRule, maxLength: keyMax }, `${at} keys`) : z.string().max(keyMax);
  const quote = (pattern: string) => pattern.replaceAll('\\', '\\\\').replaceAll("'", "\\'");
  const rules: Rule[] = [
    { rule: `self.all(k, size(k) <= ${keyMax})`, message: `${at} keys must be at most ${keyMax} characters` },
  ];
  if (keyRule)
    rules.push({
      rule: `self.all(k, k.matches('${quote(keyRule.pattern!)}'))`,
      message: `${at} keys must ${keyRule.must}`,
    });
  if (valueRule)
    rules.push({
      rule: `self.all(k, self[k].matches('${quote(valueRule.pattern!)}'))`,
      message: `${at} values must ${valueRule.must}`,
    });
  const map = z
    .record(key, z.string().max(valueMax))
    .refine((m) => Object.keys(m).length <= maxProperties, `${at} must have at most ${maxProperties} keys`)
    .refine(
      (m) => !valueRule || Object.values(m).every(valueRule.test),
      `${at} values must ${valueRule?.must}`,
    )
    .meta({ maxProperties });
  return cel(map, ...rules);
}

export const immutable = <T extends z.ZodType>(schema: T, field: string): T =>
  cel(schema, { rule: 'self == oldSelf', message: `${field} is immutable`, reason: 'FieldValueForbidden' });

export const localRef = (kind: string) =>
  doc(
    z.object({ name: doc(z.string().min(1).max(253), `name of the ${kind}`) }),
    `${/^[AEIOU]/.test(kind) ? 'an' : 'a'} ${kind} in the same namespace`,
  );

/** Spec-level rules: exactly one of a ref/id pair, and neither may be swapped after creation. */
export const exactlyOne = (a: string, b: string): Rule[] => [
  { rule: `has(self.${a}) != has(self.${b})`, message: `exactly one of ${a} or ${b} must be set` },
  {
    rule: `has(self.${a}) == has(oldSelf.${a}) && has(self.${b}) == has(oldSelf.${b})`,
    message: `${a}/${b} are immutable`,
  },
];

export const commonSpec = {
  description: doc(
    bytesLimited(DESCRIPTION_MAX_BYTES, 'description'),
    'human-readable description of the remote resource',
  ).optional(),
  metadata: doc(
    bytesLimited(USER_METADATA_MAX_BYTES, 'metadata'),
    'arbitrary user data stored with the remote resource (the operator keeps its owner marker beside it)',
  ).optional(),
  deletionPolicy: doc(
    z.enum(['Delete', 'Retain']).default('Delete'),
    'Delete removes the remote resource when this object is deleted; Retain leaves it in place',
  ),
  managementPolicy: doc(
    z.enum(['Full', 'Observe']).default('Full'),
    'Full: the operator creates, updates and deletes the remote resource; Observe: it only reads the one named by the edge.tunnel.dev/id annotation, reports it in status and reports drift from the spec, and never writes to it (deleting the object leaves it in place)',
  ),
};

export const Conditions = z.array(
  z.object({
    type: doc(
      z.string(),
      'Ready, Reconciling or Stalled (kstatus); Paused and TunnelsOnline on the managed kinds',
    ),
    status: doc(z.enum(['True', 'False', 'Unknown']), 'True, False or Unknown'),
    reason: doc(
      z.string(),
      'why, in one CamelCase word (Synced, WaitingForReference, APIRejected...; each is listed in docs/reference.md)',
    ).optional(),
    message: doc(z.string(), 'what happened, in words: the API answer, the object waited for...').optional(),
    observedGeneration: doc(
      z.number().int(),
      'the metadata.generation the condition was written for',
    ).optional(),
    lastTransitionTime: doc(z.string(), 'when status last changed (RFC 3339)').optional(),
  }),
);

/** The generation a status describes (every kind). */
export const ObservedGeneration = doc(
  z.number().int(),
  'the metadata.generation the operator last reconciled: the status and conditions describe it',
);

export const commonStatus = {
  id: doc(z.string(), 'id of the remote resource').optional(),
  uri: doc(z.string(), 'API address of the remote resource').optional(),
  createdAt: doc(z.string(), 'when the remote resource was created (RFC 3339)').optional(),
  observedGeneration: ObservedGeneration.optional(),
  conditions: doc(
    Conditions,
    'kstatus conditions: Ready, Reconciling, Stalled; Paused while edge.tunnel.dev/paused is "true"',
  ).optional(),
  tunnelsOnline: doc(
    z.object({
      count: doc(z.number().int(), 'online tunnels serving it now'),
      tunnels: doc(
        z
          .array(
            z.object({
              id: doc(z.string(), 'id of the tunnel'),
              region: doc(z.string(), 'region the tunnel is connected to'),
            }),
          )
          .max(10),
        'the first 10 of them',
      ).optional(),
    }),
    'online tunnels serving it (kinds that tunnels serve), refreshed every --agent-metrics-interval',
  ).optional(),
  account: doc(
    z.string(),
    'the API account holding the remote resource: installation, EdgeAccount/<namespace>/<name> or ClusterEdgeAccount/<name>',
  ).optional(),
  lastHandledReconcileAt: doc(
    z.string(),
    'the last edge.tunnel.dev/reconcile-requested-at value handled (an observation and sync on request)',
  ).optional(),
};

export type CommonSpec = { description?: string; metadata?: string; deletionPolicy?: 'Delete' | 'Retain' };

/** The CRD around a kind's names, printer columns and schemas: the same for every kind of the group. */
export function crdEnvelope(k: {
  kind: string;
  plural: string;
  shortNames: string[];
  scope: 'Namespaced' | 'Cluster';
  description: string;
  columns: object[];
  spec: Json;
  status: Json;
}): Json {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${k.plural}.${G}`, labels: { 'app.kubernetes.io/part-of': 'edge-operator' } },
    spec: {
      group: G,
      scope: k.scope,
      names: {
        kind: k.kind,
        listKind: `${k.kind}List`,
        plural: k.plural,
        singular: k.kind.toLowerCase(),
        shortNames: k.shortNames,
        categories: ['edge'],
      },
      versions: [
        {
          name: V,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: k.columns,
          schema: {
            openAPIV3Schema: {
              description: k.description,
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: k.spec,
                status: k.status,
              },
            },
          },
        },
      ],
    },
  };
}

/** A key of a Secret in the same namespace: a value the spec does not hold itself. */
export const SecretKeyRef = doc(
  z.object({
    name: doc(z.string().min(1).max(253), 'name of the Secret'),
    key: doc(z.string().min(1).max(253), 'key in its data'),
  }),
  'a key of a Secret in the same namespace',
);
export type SecretKeyRef = z.infer<typeof SecretKeyRef>;
