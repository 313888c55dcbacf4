import { z } from 'zod';
import { Ref, StringMap } from './common.ts';

export const TunnelSession = z.object({
  id: z.string(),
  uri: z.string(),
  agent_version: z.string(),
  credential: Ref,
  ip: z.string(),
  metadata: z.string().optional(),
  os: z.string(),
  region: z.string(),
  started_at: z.string(),
  transport: z.string(),
});

export const Tunnel = z.object({
  id: z.string(),
  public_url: z.string().optional(),
  started_at: z.string(),
  metadata: z.string().optional(),
  proto: z.string().optional(),
  region: z.string(),
  tunnel_session: Ref,
  endpoint: Ref.optional(),
  labels: StringMap.optional(),
  backends: z.array(Ref).optional(),
  forwards_to: z.string(),
});

/** Agent commands take an empty JSON object. */
export const AgentCommand = z.strictObject({});

export type TunnelSession = z.infer<typeof TunnelSession>;
export type Tunnel = z.infer<typeof Tunnel>;
