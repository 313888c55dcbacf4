// HTTPSEdge, TCPEdge and TLSEdge: hostports plus edge modules.
import { z } from 'zod';
import type {
  HTTPSEdge as HRemote,
  TLSEdge as LRemote,
  TCPEdge as TRemote,
} from '../../api/schemas/edges.ts';
import { compact, crudApi, defineBinding } from '../runtime/bindings/binding.ts';
import { cel, doc } from './crd-schema.ts';
import {
  backendIdsOf,
  backendModule,
  edgeModule,
  Hostports,
  httpsTLSTermination,
  mutualTLS,
  tlsTermination,
} from './shared-fields.ts';

type Hosts = { hostports: string[] };

/**
 * An HTTPS edge as this kind keeps it: without its routes, which are HTTPSEdgeRoute objects'
 * own resources. A route's change is no news for its edge, and a kept edge with its routes
 * would be a second copy of every route. The list returns edges with their routes: one pass
 * observes both kinds (`carries`), and the observer keeps the edges without them.
 */
type HEdge = Omit<HRemote, 'routes'>;
const withoutRoutes = ({ routes: _, ...edge }: HRemote): HEdge => edge;
const httpsEdgeApi = (() => {
  const api = crudApi((c) => c.httpsEdges);
  return {
    ...api,
    create: async (...a: Parameters<typeof api.create>) => withoutRoutes(await api.create(...a)),
    get: async (...a: Parameters<typeof api.get>) => withoutRoutes(await api.get(...a)),
    update: async (...a: Parameters<typeof api.update>) => withoutRoutes(await api.update(...a)),
  };
})();

/** What the three edge kinds share: hostports in spec and status. */
const edgeBase = {
  status: z.object({
    hostports: doc(z.array(z.string()), 'hostports of the edge, as the API holds them').optional(),
  }),
  columns: [{ name: 'Hostports', type: 'string' as const, jsonPath: '.spec.hostports' }],
  desired: (s: { hostports?: string[] }): Hosts => ({ hostports: s.hostports ?? [] }),
  fromRemote: (r: { hostports: string[] | null }): Hosts => ({ hostports: r.hostports ?? [] }),
  updatable: ['hostports'] as const,
  statusOf: (r: { hostports: string[] | null }) => ({ hostports: r.hostports ?? [] }),
};
const hostportsSpec = (r: { hostports: string[] | null }) =>
  r.hostports?.length ? { hostports: r.hostports } : {};

const HTTPSSpec = z.object({
  hostports: Hostports,
  tlsTermination: httpsTLSTermination.crd,
});
export const HTTPSEdge = defineBinding<z.infer<typeof HTTPSSpec>, HEdge, Hosts>({
  kind: 'HTTPSEdge',
  plural: 'httpsedges',
  shortNames: ['edgehttps'],
  description: 'An HTTPS edge: hostports whose traffic HTTPSEdgeRoutes route.',
  spec: HTTPSSpec,
  ...edgeBase,
  modules: [
    edgeModule(
      'tls_termination',
      (s, ref, secret) => httpsTLSTermination.body(s.tlsTermination, { ref, secret }),
      (c) => c.httpsEdgeModules.tls_termination,
    ),
  ],
  api: httpsEdgeApi,
  carries: { kind: 'HTTPSEdgeRoute', field: 'routes' },
  exportSpec: (r, x) =>
    compact({ ...hostportsSpec(r), tlsTermination: httpsTLSTermination.spec(r.tls_termination, x) }),
});

const edgeBackend = backendModule('where the edge sends traffic');

const TCPSpec = z.object({ hostports: Hostports, backend: edgeBackend.crd });
export const TCPEdge = defineBinding<z.infer<typeof TCPSpec>, TRemote, Hosts>({
  kind: 'TCPEdge',
  plural: 'tcpedges',
  shortNames: ['edgetcp'],
  tunnels: 'through',
  tunnelIds: backendIdsOf,
  description: 'A TCP edge: hostports and the backend that serves them.',
  spec: TCPSpec,
  ...edgeBase,
  references: (s) => edgeBackend.references(s.backend, 'spec.backend'),
  modules: [
    edgeModule(
      'backend',
      (s, ref, secret) => edgeBackend.body(s.backend, { ref, secret }),
      (c) => c.tcpEdgeModules.backend,
    ),
  ],
  api: crudApi((c) => c.tcpEdges),
  exportSpec: (r, x) => compact({ ...hostportsSpec(r), backend: edgeBackend.spec(r.backend, x) }),
});

/** Mutual TLS checks client certificates where TLS ends: at the edge (ERR_NGROK_7062). */
const TLSSpec = cel(
  z.object({
    hostports: Hostports,
    mutualTLS: mutualTLS.crd,
    tlsTermination: tlsTermination.crd,
    backend: edgeBackend.crd,
  }),
  {
    rule: "!(has(self.mutualTLS) && self.mutualTLS.enabled && has(self.tlsTermination) && self.tlsTermination.enabled && self.tlsTermination.terminateAt == 'upstream')",
    message:
      'mutualTLS must be unset or disabled when tlsTermination.terminateAt is upstream: client certificates are checked where TLS ends, at the edge',
    fieldPath: '.mutualTLS',
  },
);
export const TLSEdge = defineBinding<z.infer<typeof TLSSpec>, LRemote, Hosts>({
  kind: 'TLSEdge',
  plural: 'tlsedges',
  shortNames: ['edgetls'],
  tunnels: 'through',
  tunnelIds: backendIdsOf,
  description: 'A TLS edge: hostports, mutual TLS, TLS termination and a backend.',
  spec: TLSSpec,
  ...edgeBase,
  references: (s) => edgeBackend.references(s.backend, 'spec.backend'),
  modules: [
    edgeModule(
      'backend',
      (s, ref, secret) => edgeBackend.body(s.backend, { ref, secret }),
      (c) => c.tlsEdgeModules.backend,
    ),
    edgeModule(
      'mutual_tls',
      (s, ref, secret) => mutualTLS.body(s.mutualTLS, { ref, secret }),
      (c) => c.tlsEdgeModules.mutual_tls,
    ),
    edgeModule(
      'tls_termination',
      (s, ref, secret) => tlsTermination.body(s.tlsTermination, { ref, secret }),
      (c) => c.tlsEdgeModules.tls_termination,
    ),
  ],
  api: crudApi((c) => c.tlsEdges),
  exportSpec: (r, x) =>
    compact({
      ...hostportsSpec(r),
      backend: edgeBackend.spec(r.backend, x),
      tlsTermination: tlsTermination.spec(r.tls_termination, x),
      mutualTLS: mutualTLS.spec(r.mutual_tls, x),
    }),
});
