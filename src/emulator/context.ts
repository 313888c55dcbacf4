import type { AccountRecords } from './store.ts';

export interface Caller {
  ownerId: string;
  admin: boolean;
  /** The account the caller's key belongs to. */
  account: string;
}

/** What every handler gets: its account's records, the public origin for uris, the caller, a clock. */
export interface Ctx {
  store: AccountRecords;
  origin: string;
  caller: Caller;
  now(): number;
}

// Where each kind of id lives, for the uri of a Ref.
const URI_BASE: [string, string][] = [
  ['edghtsrt_', ''], // routes are nested: resolved by routeUri
  ['edghts_', '/edges/https'],
  ['edgtcp_', '/edges/tcp'],
  ['edgtls_', '/edges/tls'],
  ['ipr_', '/ip_policy_rules'],
  ['ipp_', '/ip_policies'],
  ['ipx_', '/ip_restrictions'],
  ['bkdtg_', '/backends/tunnel_group'],
  ['bkdwd_', '/backends/weighted'],
  ['bkdhr_', '/backends/http_response'],
  ['sshcr_', '/ssh_credentials'],
  ['cr_', '/credentials'],
  ['ts_', '/tunnel_sessions'],
  ['tn_', '/tunnels'],
  ['ep_', '/endpoints'],
  ['ca_', '/certificate_authorities'],
  ['usr_', '/users'],
  ['bot_', '/bot_users'],
];

export function uriOf(ctx: Ctx, id: string, edgeId?: string): string {
  if (id.startsWith('edghtsrt_') && edgeId) return `${ctx.origin}/edges/https/${edgeId}/routes/${id}`;
  const base = URI_BASE.find(([p]) => id.startsWith(p))?.[1] ?? '';
  return `${ctx.origin}${base}/${id}`;
}

export const ref = (ctx: Ctx, id: string) => ({ id, uri: uriOf(ctx, id) });
export const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
