// A kind's spec and a module's field, derived from the API's bodies (derive.ts): what each
// binding declares is only what the wire cannot say.
import type { z } from 'zod';
import type { ExportContext, ResolveRef } from '../runtime/bindings/binding.ts';
import { doc } from './crd-schema.ts';
import { derive, type FieldMap, noSecrets, type WireContext } from './derive.ts';

type Obj = Record<string, unknown>;

/**
 * A kind's own spec fields from the API's create body: description and metadata are the
 * engine's; a field the update body lacks is immutable; `updatable` is what it takes.
 */
export function kindSpec(create: z.ZodObject, update: z.ZodObject, plan: FieldMap = {}) {
  const mutable = new Set(Object.keys(update.shape));
  const full: FieldMap = { description: { omit: true }, metadata: { omit: true } };
  for (const k of Object.keys(create.shape))
    full[k] = { ...(k in full ? full[k] : { immutable: !mutable.has(k) }), ...plan[k] };
  const updatable = Object.keys(update.shape).filter((k) => !full[k]?.omit);
  const d = derive(create, full);
  return {
    ...d,
    updatable,
    desired: (spec: Obj, ref: ResolveRef) => d.toWire(spec, { ref, secret: noSecrets }),
  };
}

/** A module of a route or an edge: its CRD field, body, export, references and Secrets. */
export function moduleOf(wire: z.ZodObject, description: string, plan: FieldMap = {}) {
  const d = derive(wire, plan);
  return {
    crd: doc(d.schema, description).optional(),
    body: (m: unknown, ctx: WireContext) => (m ? d.toWire(m as Obj, ctx) : null),
    spec: (m: unknown, x: ExportContext) => (m ? d.fromWire(m as Obj, x) : undefined),
    references: (m: unknown, path: string) => (m ? d.references(m as Obj, path) : []),
    secrets: (m: unknown, path: string) => (m ? d.secrets(m as Obj, path) : []),
  };
}
export type ModuleOf = ReturnType<typeof moduleOf>;
