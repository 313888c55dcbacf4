// CRD shapes shared by several kinds (backends, IP policies, TLS, hostports), their wire
// bodies, and their export back to spec fields.
import { z } from 'zod';
import { TERMINATE_AT, TLS_MIN_VERSIONS } from '../../api/limits.ts';
import { idRule, RULES } from '../../api/rules.ts';
import {
  type ExportContext,
  exportEnabled,
  type ModuleBinding,
  type Reference,
  type ResolveRef,
} from '../runtime/binding.ts';
import { cel, doc, exactlyOne, localRef, noRepeats, ruled } from './crd-schema.ts';

export const enabled = doc(
  z.boolean().default(true),
  'false keeps the module configured but not applied to traffic',
);

export const BACKEND_KINDS = ['TunnelGroupBackend', 'WeightedBackend'] as const;
export const BackendRef = doc(
  z.object({
    kind: doc(z.enum(BACKEND_KINDS), 'the kind of the backend object'),
    name: doc(z.string().min(1).max(253), 'its name'),
  }),
  'a TunnelGroupBackend or WeightedBackend in the same namespace',
);
/** Any backend's id (a weighted backend may also point at an HTTP response backend). */
export const BackendID = ruled(
  idRule('tunnelGroupBackend', 'weightedBackend', 'httpResponseBackend'),
  'backendID',
);
const backendID = doc(BackendID, 'id of a backend managed elsewhere');

export const BackendModule = cel(
  z.object({ enabled, backendRef: BackendRef.optional(), backendID: backendID.optional() }),
  exactlyOne('backendRef', 'backendID')[0]!,
);
export type BackendModule = z.infer<typeof BackendModule>;

export const backendRefs = (path: string, m: BackendModule | undefined): Reference[] =>
  m?.backendRef ? [{ path: `${path}.backendRef`, kind: m.backendRef.kind, name: m.backendRef.name }] : [];
export const backendBody = (m: BackendModule | undefined, ref: ResolveRef) =>
  m
    ? { enabled: m.enabled ?? true, backend_id: m.backendID ?? ref(m.backendRef!.kind, m.backendRef!.name) }
    : null;

/** IP policies by name in the namespace and/or by id; at least one in all (policiesRule). */
export const PolicyChoice = {
  ipPolicyRefs: doc(
    noRepeats(z.array(localRef('IPPolicy')).max(100), 'name'),
    'IP policies in the same namespace',
  ).optional(),
  ipPolicyIDs: doc(
    noRepeats(z.array(ruled(idRule('ipPolicy'), 'ipPolicyIDs')).max(100)),
    'ids of IP policies managed elsewhere',
  ).optional(),
};
export const policiesRule = (message: string) => ({
  rule: '(has(self.ipPolicyRefs) ? size(self.ipPolicyRefs) : 0) + (has(self.ipPolicyIDs) ? size(self.ipPolicyIDs) : 0) >= 1',
  message,
});

// --- export: remote modules back to spec fields

/** A backend id as a reference to the exported backend (of either kind), else the id. */
export const backendRefOrID = (x: ExportContext, id: string) => {
  const r = x.ref(id);
  return r ? { backendRef: { kind: r.kind, name: r.name } } : { backendID: id };
};
export const backendSpec = (
  m: { enabled: boolean; backend: { id: string } } | null | undefined,
  x: ExportContext,
) => (m ? { ...exportEnabled(m), ...backendRefOrID(x, m.backend.id) } : undefined);

/** IP policies as references where exported, ids otherwise; the API's order kept. */
export function policyRefs(policies: { id: string }[], x: ExportContext) {
  const refs = policies.flatMap((p) => {
    const r = x.ref(p.id);
    return r ? [{ name: r.name }] : [];
  });
  const ids = policies.filter((p) => !x.ref(p.id)).map((p) => p.id);
  return { ...(refs.length ? { ipPolicyRefs: refs } : {}), ...(ids.length ? { ipPolicyIDs: ids } : {}) };
}

export const tlsTerminationSpec = (
  m: { enabled: boolean; terminate_at?: string | null; min_version?: string | null } | null | undefined,
  withTerminateAt: boolean,
) =>
  m
    ? {
        ...exportEnabled(m),
        // 'edge' is the spec's default
        ...(withTerminateAt && m.terminate_at && m.terminate_at !== 'edge'
          ? { terminateAt: m.terminate_at }
          : {}),
        ...(m.min_version ? { minVersion: m.min_version } : {}),
      }
    : undefined;

const minVersion = doc(
  z.enum(TLS_MIN_VERSIONS),
  'minimum TLS version (default: a safe choice of the service)',
);
export const HTTPSTLSTermination = z.object({ enabled, minVersion: minVersion.optional() });
export const TLSTermination = cel(
  z.object({
    enabled,
    terminateAt: doc(z.enum(TERMINATE_AT).default('edge'), 'edge terminates TLS; upstream passes it through'),
    minVersion: minVersion.optional(),
  }),
  {
    rule: "!(has(self.terminateAt) && self.terminateAt == 'upstream' && has(self.minVersion))",
    message: 'minVersion must be unset when terminateAt is upstream',
  },
);
export const MutualTLS = z.object({
  enabled,
  certificateAuthorityIDs: doc(
    z
      .array(ruled(idRule('certificateAuthority'), 'certificateAuthorityIDs'))
      .min(1)
      .max(50),
    'certificate authorities that validate client certificates',
  ),
});

/** Hostports of an edge. */
export const Hostports = doc(
  z.array(ruled(RULES.hostport, 'hostports')).max(50),
  'host:port pairs the edge listens on',
);

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
