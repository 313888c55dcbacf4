// HTTPSEdge, TCPEdge and TLSEdge: hostports plus edge modules.
import { z } from 'zod';
import type {
  HTTPSEdge as HRemote,
  TLSEdge as LRemote,
  TCPEdge as TRemote,
} from '../../api/schemas/edges.ts';
import { compact, crudApi, defineBinding, exportEnabled } from '../runtime/binding.ts';
import { doc } from './crd-schema.ts';
import {
  BackendModule,
  backendBody,
  backendRefs,
  backendSpec,
  edgeModule,
  Hostports,
  HTTPSTLSTermination,
  MutualTLS,
  TLSTermination,
  tlsTerminationSpec,
} from './shared-fields.ts';

type Hosts = { hostports: string[] };
/** What the three edge kinds share: hostports in spec and status. */
const edgeBase = {
  status: z.object({ hostports: z.array(z.string()).optional() }),
  columns: [{ name: 'Hostports', type: 'string' as const, jsonPath: '.spec.hostports' }],
  desired: (s: { hostports?: string[] }): Hosts => ({ hostports: s.hostports ?? [] }),
  observe: (r: { hostports: string[] | null }): Hosts => ({ hostports: r.hostports ?? [] }),
  updatable: ['hostports'] as const,
  statusOf: (r: { hostports: string[] | null }) => ({ hostports: r.hostports ?? [] }),
};
const hostportsSpec = (r: { hostports: string[] | null }) =>
  r.hostports?.length ? { hostports: r.hostports } : {};

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
  shortNames: ['edgehttps'],
  description: 'An HTTPS edge: hostports whose traffic HTTPSEdgeRoutes route.',
  spec: HTTPSSpec,
  ...edgeBase,
  modules: [
    edgeModule(
      'tls_termination',
      (s) => tlsTerminationBody(s.tlsTermination),
      (c) => c.httpsEdgeModules.tls_termination,
    ),
  ],
  api: crudApi((c) => c.httpsEdges),
  exportSpec: (r) =>
    compact({ ...hostportsSpec(r), tlsTermination: tlsTerminationSpec(r.tls_termination, false) }),
});

const TCPSpec = z.object({
  hostports: Hostports.optional(),
  backend: doc(BackendModule, 'where the edge sends traffic').optional(),
});
export const TCPEdge = defineBinding<z.infer<typeof TCPSpec>, TRemote, Hosts>({
  kind: 'TCPEdge',
  plural: 'tcpedges',
  shortNames: ['edgetcp'],
  description: 'A TCP edge: hostports and the backend that serves them.',
  spec: TCPSpec,
  ...edgeBase,
  references: (s) => backendRefs('spec.backend', s.backend),
  modules: [
    edgeModule(
      'backend',
      (s, ref) => backendBody(s.backend, ref),
      (c) => c.tcpEdgeModules.backend,
    ),
  ],
  api: crudApi((c) => c.tcpEdges),
  exportSpec: (r, x) => compact({ ...hostportsSpec(r), backend: backendSpec(r.backend, x) }),
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
  shortNames: ['edgetls'],
  description: 'A TLS edge: hostports, mutual TLS, TLS termination and a backend.',
  spec: TLSSpec,
  ...edgeBase,
  references: (s) => backendRefs('spec.backend', s.backend),
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
  api: crudApi((c) => c.tlsEdges),
  exportSpec: (r, x) =>
    compact({
      ...hostportsSpec(r),
      backend: backendSpec(r.backend, x),
      tlsTermination: tlsTerminationSpec(r.tls_termination, true),
      mutualTLS: r.mutual_tls
        ? {
            ...exportEnabled(r.mutual_tls),
            certificateAuthorityIDs: r.mutual_tls.certificate_authorities.map((c) => c.id),
          }
        : undefined,
    }),
});
