// CRD fields shared by several kinds: references that stand for ids (backends, IP
// policies), the modules edges share, hostports, and edge module bindings.
import { z } from 'zod';
import { ID_PREFIX, type IdKind } from '../../api/limits.ts';
import { idRule } from '../../api/rules.ts';
import { TCPEdgeCreate, TCPEdgeUpdate } from '../../api/schemas/edges.ts';
import {
  BackendModuleIn,
  HTTPSTLSTerminationModuleIn,
  MutualTLSModuleIn,
  TLSTerminationModuleIn,
} from '../../api/schemas/modules.ts';
import { type ExportContext, type ModuleBinding, refOrID } from '../runtime/bindings/binding.ts';
import { rawIds } from '../runtime/engine/index.ts';
import { doc, exactlyOne, immutable, localRef, noRepeats, ruled } from './crd-schema.ts';
import type { Replacement } from './derive.ts';
import { kindSpec, moduleOf } from './kind-spec.ts';

const BACKEND_KINDS = ['TunnelGroupBackend', 'WeightedBackend'] as const;
export const BackendRef = doc(
  z.object({
    kind: doc(z.enum(BACKEND_KINDS), 'the kind of the backend object'),
    name: doc(z.string().min(1).max(253), 'its name'),
  }),
  'a TunnelGroupBackend or WeightedBackend in the same namespace',
);
type BackendRef = z.infer<typeof BackendRef>;
/** Any backend's id (a weighted backend may also point at an HTTP response backend). */
export const BackendID = ruled(
  idRule('tunnelGroupBackend', 'weightedBackend', 'httpResponseBackend'),
  'backendID',
);

/**
 * The backends a spec names by id (`backendID`, at any depth: a module's, a weighted backend's
 * children), for the online tunnels (`Binding.tunnelIds`): a tunnel group backend's tunnels are
 * listed by its id.
 */
export const backendIdsOf = (spec: unknown): { id: string; listed: boolean }[] =>
  rawIds(spec, 'spec')
    .filter((x) => x.path.endsWith('.backendID'))
    .map(({ id }) => ({ id, listed: id.startsWith(`${ID_PREFIX.tunnelGroupBackend}_`) }));

/** A backend id as a reference to the exported backend (of either kind), else the id. */
export const backendRefOrID = (x: ExportContext, id: string) => {
  const r = x.ref(id);
  return r ? { backendRef: { kind: r.kind, name: r.name } } : { backendID: id };
};

/** `backend_id` as a reference to a backend object or a backend's id. */
const backendChoice: Replacement = {
  crd: {
    backendRef: BackendRef.optional(),
    backendID: doc(BackendID, 'id of a backend managed elsewhere').optional(),
  },
  rules: [exactlyOne('backendRef', 'backendID')[0]!],
  toWire: (s, { ref }) =>
    (s.backendID as string) ?? ref((s.backendRef as BackendRef).kind, (s.backendRef as BackendRef).name),
  fromWire: (m, x) => backendRefOrID(x, (m.backend as { id: string }).id),
  references: (s, path) => {
    const r = s.backendRef as BackendRef | undefined;
    return r ? [{ path: `${path}.backendRef`, kind: r.kind, name: r.name }] : [];
  },
};
export const backendModule = (description: string) =>
  moduleOf(BackendModuleIn, description, { backend_id: { replace: backendChoice } });

/** IP policies by name in the namespace and/or by id (`max` of each); at least one in all. */
const policyFields = (max: number) => ({
  ipPolicyRefs: doc(
    noRepeats(z.array(localRef('IPPolicy')).max(max), 'name'),
    'IP policies in the same namespace',
  ).optional(),
  ipPolicyIDs: doc(
    noRepeats(z.array(ruled(idRule('ipPolicy'), 'ipPolicyIDs')).max(max)),
    'ids of IP policies managed elsewhere',
  ).optional(),
});
/** IP policies as references where exported, ids otherwise; the API's order kept. */
function policyRefs(policies: { id: string }[], x: ExportContext) {
  const refs = policies.flatMap((p) => {
    const r = x.ref(p.id);
    return r ? [{ name: r.name }] : [];
  });
  const ids = policies.filter((p) => !x.ref(p.id)).map((p) => p.id);
  return { ...(refs.length ? { ipPolicyRefs: refs } : {}), ...(ids.length ? { ipPolicyIDs: ids } : {}) };
}
/** `ip_policy_ids` as references to IPPolicy objects and/or ids, `max` of each (67 bytes an id). */
export const policyChoice = (message: string, max = 100): Replacement => ({
  crd: policyFields(max),
  rules: [
    {
      rule: '(has(self.ipPolicyRefs) ? size(self.ipPolicyRefs) : 0) + (has(self.ipPolicyIDs) ? size(self.ipPolicyIDs) : 0) >= 1',
      message,
    },
  ],
  toWire: (s, { ref }) => [
    ...((s.ipPolicyRefs as { name: string }[] | undefined) ?? []).map((r) => ref('IPPolicy', r.name)),
    ...((s.ipPolicyIDs as string[] | undefined) ?? []),
  ],
  fromWire: (m, x) => policyRefs(m.ip_policies as { id: string }[], x),
  references: (s, path) =>
    ((s.ipPolicyRefs as { name: string }[] | undefined) ?? []).map((r, i) => ({
      path: `${path}.ipPolicyRefs[${i}]`,
      kind: 'IPPolicy',
      name: r.name,
    })),
});

export const httpsTLSTermination = moduleOf(HTTPSTLSTerminationModuleIn, 'TLS termination at the edge');
export const tlsTermination = moduleOf(
  TLSTerminationModuleIn,
  'terminate TLS at the edge, or pass it upstream',
  { terminate_at: { default: 'edge' } },
);
export const mutualTLS = moduleOf(MutualTLSModuleIn, 'require client certificates signed by these CAs', {
  // the API takes an empty list (the module kept, checking nothing yet): export writes it so
  certificate_authority_ids: { required: true, max: 50, refsOut: 'certificate_authorities' },
});

/** Hostports of an edge (optional), as every edge kind's create body has them. */
export const Hostports = kindSpec(TCPEdgeCreate, TCPEdgeUpdate, {
  hostports: { max: 50 },
  backend: { omit: true },
}).schema.shape.hostports as z.ZodOptional<z.ZodArray<z.ZodString>>;

/**
 * An id the API takes, as a reference to an object of `kind` in the namespace or the id of
 * one managed elsewhere: exactly one, neither swapped after creation.
 */
export function refOrIDChoice(
  kind: string,
  idKind: IdKind,
  [refKey, idKey]: [string, string],
  idOut: (out: Record<string, unknown>) => string,
  what: string,
): Replacement {
  return {
    crd: {
      [refKey]: immutable(localRef(kind), refKey).optional(),
      [idKey]: doc(
        immutable(ruled(idRule(idKind), idKey), idKey),
        `id of ${what} managed elsewhere (immutable)`,
      ).optional(),
    },
    rules: exactlyOne(refKey, idKey),
    toWire: (s, { ref }) =>
      (s[idKey] as string | undefined) ?? ref(kind, (s[refKey] as { name: string }).name),
    fromWire: (out, x) => refOrID(x, idOut(out), refKey, idKey),
    references: (s, path) => {
      const r = s[refKey] as { name: string } | undefined;
      return r ? [{ path: `${path}.${refKey}`, kind, name: r.name }] : [];
    },
  };
}

/** A module binding whose PUT/DELETE take the resource id only (edge modules). */
export function edgeModule<S>(
  name: string,
  desired: ModuleBinding<S>['desired'],
  ops:
    | { put(id: string, body: never): Promise<unknown>; delete(id: string): Promise<unknown> }
    | ((c: Parameters<ModuleBinding['put']>[0]) => {
        put(id: string, body: never): Promise<unknown>;
        delete(id: string): Promise<unknown>;
      }),
): ModuleBinding<S> {
  const o = typeof ops === 'function' ? ops : () => ops;
  return {
    name,
    desired,
    put: (c, id, body) => o(c).put(id, body as never),
    delete: (c, id) => o(c).delete(id),
  };
}
