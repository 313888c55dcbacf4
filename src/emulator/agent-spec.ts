// A simulated agent as it is given (`--agents`, POST /_emulator/agents) and stored: below the
// records, so the shape of what the store holds depends on nothing that acts on it.
import { z } from 'zod';

export const AgentTunnelSpec = z.strictObject({
  labels: z.record(z.string(), z.string()).optional(),
  forwards_to: z.string(),
  proto: z.enum(['http', 'https', 'tcp', 'tls']).optional(),
  public_url: z.string().optional(),
  metadata: z.string().optional(),
});
export const AgentSpec = z.strictObject({
  name: z.string().min(1),
  os: z.string().default('linux'),
  agent_version: z
    .string()
    .regex(/^\d+\.\d+\.\d+$/, 'must be a semantic version like 3.5.0')
    .default('3.5.0'),
  region: z.string().default('us'),
  transport: z.enum(['service/v2', 'ssh']).default('service/v2'),
  ip: z.string().default('203.0.113.10'),
  credential_id: z.string().default('cr_emulator'),
  metadata: z.string().default(''),
  update: z
    .strictObject({
      /** The newest version the update channel offers (may be a new major; it is never taken). */
      available_version: z.string().optional(),
      checks_disabled: z.boolean().default(false),
      /** How long an update takes before the agent is "updated, not restarted". */
      duration_ms: z.number().int().min(0).default(3000),
    })
    .default({ checks_disabled: false, duration_ms: 3000 }),
  tunnels: z.array(AgentTunnelSpec).default([]),
});
export type AgentSpec = z.infer<typeof AgentSpec>;
/** `--agents`: each agent runs in the default account unless it names another (`account`). */
export const AgentsFile = z.strictObject({
  agents: z.array(AgentSpec.extend({ account: z.string().optional() })),
});
