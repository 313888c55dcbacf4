// Every operation's handler, keyed like the operations table ("ipPolicies.create", ...): the
// families' generic CRUD, an HTTPS edge's routes, the module sub-resources, agents' sessions
// and tunnels. Handlers know the context (an account's records, the caller, the clock), never HTTP.
import { agentHandlers } from './agents.ts';
import { BACKEND_FAMILIES } from './backends.ts';
import { CREDENTIAL_FAMILIES } from './credentials.ts';
import { crud, type Family, type Handler } from './crud.ts';
import { EDGE_FAMILIES, edgeSubresourceHandlers } from './edges.ts';
import { IP_FAMILIES } from './ip.ts';

export type { Handler, Result } from './crud.ts';

const FAMILIES: Record<string, Family> = {
  ...IP_FAMILIES,
  ...BACKEND_FAMILIES,
  ...CREDENTIAL_FAMILIES,
  ...EDGE_FAMILIES,
};

export function operationHandlers(): Record<string, Handler> {
  const out: Record<string, Handler> = {};
  for (const [group, family] of Object.entries(FAMILIES))
    for (const [op, h] of Object.entries(crud(family))) out[`${group}.${op}`] = h;
  return { ...out, ...edgeSubresourceHandlers(), ...agentHandlers() };
}
