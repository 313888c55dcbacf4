import type { AnyBinding } from '../runtime/bindings/binding.ts';
import { HTTPSEdge, TCPEdge, TLSEdge } from './edges.ts';
import { HTTPSEdgeRoute } from './https-edge-route.ts';
import { IPPolicy } from './ip-policy.ts';
import { IPPolicyRule } from './ip-policy-rule.ts';
import { IPRestriction } from './ip-restriction.ts';
import { SSHCredential } from './ssh-credential.ts';
import { TunnelGroupBackend } from './tunnel-group-backend.ts';
import { WeightedBackend } from './weighted-backend.ts';

/** Every kind the operator manages. Adding a kind: a binding file, a line here, a test. */
export const BINDINGS: AnyBinding[] = [
  IPPolicy,
  IPPolicyRule,
  IPRestriction,
  TunnelGroupBackend,
  WeightedBackend,
  SSHCredential,
  HTTPSEdge,
  HTTPSEdgeRoute,
  TCPEdge,
  TLSEdge,
];
