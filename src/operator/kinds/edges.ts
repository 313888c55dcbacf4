// HTTPSEdge, TCPEdge and TLSEdge: hostports plus edge modules.
import { z } from 'zod';
import type {
  HTTPSEdge as HRemote,
  TLSEdge as LRemote,
  TCPEdge as TRemote,
} from '../../api/schemas/edges.ts';
import { defineBinding } from './binding.ts';
import { doc } from './crd-schema.ts';
import {
  BackendModule,
  backendBody,
  backendRefs,
  edgeModule,
  Hostports,
  HTTPSTLSTermination,
  MutualTLS,
  TLSTermination,
} from './module-schemas.ts';

type Hosts = { hostports: string[] };
const hostports = (s: { hostports?: string[] }) => ({ hostports: s.hostports ?? [] });
const observeHosts = (r: { hostports: string[] | null }) => ({ hostports: r.hostports ?? [] });
const hostportsStatus = z.object({ hostports: z.array(z.string()).optional() });
const columns = [{ name: 'Hostports', type: 'string' as const, jsonPath: '.spec.hostports' }];

const tlsTerminationBody = (
  t: z.infer<typeof TLSTermination> | z.infer<typeof HTTPSTLSTermination> | undefined,
) =>
  t
    ? {
        enabled: t.enabled ?? true,
        ...('terminateAt' in t && t.terminateAt ? { terminate_at: t.terminateAt } : {}),
        ...(t.minVersion ? { min_version: t.minVersion } : {}),
      }
    : null;

const HTTPSSpec = z.object({
  hostports: Hostports.optional(),
  tlsTermination: doc(HTTPSTLSTermination, 'TLS termination at the edge').optional(),
});
export const HTTPSEdge = defineBinding<z.infer<typeof HTTPSSpec>, HRemote, Hosts>({
  kind: 'HTTPSEdge',
  plural: 'httpsedges',
  shortNames: ['httpsedge'],
  description: 'An HTTPS edge: hostports whose traffic HTTPSEdgeRoutes route.',
  spec: HTTPSSpec,
  status: hostportsStatus,
  columns,
  desired: hostports,
  observe: observeHosts,
  updatable: ['hostports'],
  modules: [
    edgeModule(
      'tls_termination',
      (s) => tlsTerminationBody(s.tlsTermination),
      (c) => c.httpsEdgeModules.tls_termination,
    ),
  ],
  api: {
    create: (c, body) => c.httpsEdges.create(body as never),
    get: (c, id) => c.httpsEdges.get(id),
    update: (c, id, patch) => c.httpsEdges.update(id, patch),
    delete: (c, id) => c.httpsEdges.delete(id),
    list: (c) => c.httpsEdges.list(),
  },
  statusOf: (r) => ({ hostports: r.hostports ?? [] }),
});

const TCPSpec = z.object({
  hostports: Hostports.optional(),
  backend: doc(BackendModule, 'where the edge sends traffic').optional(),
});
export const TCPEdge = defineBinding<z.infer<typeof TCPSpec>, TRemote, Hosts>({
  kind: 'TCPEdge',
  plural: 'tcpedges',
  shortNames: ['tcpedge'],
  description: 'A TCP edge: hostports and the backend that serves them.',
  spec: TCPSpec,
  status: hostportsStatus,
  columns,
  references: (s) => backendRefs('spec.backend', s.backend),
  desired: hostports,
  observe: observeHosts,
  updatable: ['hostports'],
  modules: [
    edgeModule(
      'backend',
      (s, ref) => backendBody(s.backend, ref),
      (c) => c.tcpEdgeModules.backend,
    ),
  ],
  api: {
    create: (c, body) => c.tcpEdges.create(body as never),
    get: (c, id) => c.tcpEdges.get(id),
    update: (c, id, patch) => c.tcpEdges.update(id, patch),
    delete: (c, id) => c.tcpEdges.delete(id),
    list: (c) => c.tcpEdges.list(),
  },
  statusOf: (r) => ({ hostports: r.hostports ?? [] }),
});

const TLSSpec = z.object({
  hostports: Hostports.optional(),
  mutualTLS: doc(MutualTLS, 'require client certificates signed by these CAs').optional(),
  tlsTermination: doc(TLSTermination, 'terminate TLS at the edge, or pass it upstream').optional(),
  backend: doc(BackendModule, 'where the edge sends traffic').optional(),
});
export const TLSEdge = defineBinding<z.infer<typeof TLSSpec>, LRemote, Hosts>({
  kind: 'TLSEdge',
  plural: 'tlsedges',
  shortNames: ['tlsedge'],
  description: 'A TLS edge: hostports, mutual TLS, TLS termination and a backend.',
  spec: TLSSpec,
  status: hostportsStatus,
  columns,
  references: (s) => backendRefs('spec.backend', s.backend),
  desired: hostports,
  observe: observeHosts,
  updatable: ['hostports'],
  modules: [
    edgeModule(
      'backend',
      (s, ref) => backendBody(s.backend, ref),
      (c) => c.tlsEdgeModules.backend,
    ),
    edgeModule(
      'mutual_tls',
      (s) =>
        s.mutualTLS
          ? {
              enabled: s.mutualTLS.enabled ?? true,
              certificate_authority_ids: s.mutualTLS.certificateAuthorityIDs,
            }
          : null,
      (c) => c.tlsEdgeModules.mutual_tls,
    ),
    edgeModule(
      'tls_termination',
      (s) => tlsTerminationBody(s.tlsTermination),
      (c) => c.tlsEdgeModules.tls_termination,
    ),
  ],
  api: {
    create: (c, body) => c.tlsEdges.create(body as never),
    get: (c, id) => c.tlsEdges.get(id),
    update: (c, id, patch) => c.tlsEdges.update(id, patch),
    delete: (c, id) => c.tlsEdges.delete(id),
    list: (c) => c.tlsEdges.list(),
  },
  statusOf: (r) => ({ hostports: r.hostports ?? [] }),
});
