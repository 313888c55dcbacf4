// Simulated agents: each online agent has one tunnel session and its tunnels. Commands
// behave as the spec says; the update/restart dance uses the emulator's clock.
import { z } from 'zod';
import { ID_PREFIX } from '../api/limits.ts';
import { type Ctx, iso, ref } from './context.ts';
import { notFound, refuse } from './errors.ts';
import { newId } from './ids.ts';
import { type Handler, page as list } from './resources.ts';
import type { Rec } from './store.ts';

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

const AGENTS = 'agents';
const SESSIONS = 'tunnelSessions';
const TUNNELS = 'tunnels';

const semver = (v: string) => v.split('.').map(Number) as [number, number, number];
const newer = (a: string, b: string) => {
  const [x, y] = [semver(a), semver(b)];
  for (let i = 0; i < 3; i++) if (x[i]! !== y[i]!) return x[i]! > y[i]!;
  return false;
};

/** Starts (or restarts) an agent: a new session and new tunnels. */
function connect(ctx: Ctx, agent: Rec): Rec {
  const spec = agent.spec as AgentSpec;
  const sessionId = newId(ID_PREFIX.tunnelSession, ctx.now());
  ctx.store.put(SESSIONS, {
    id: sessionId,
    agent: agent.id,
    agent_version: agent.version,
    credential_id: spec.credential_id,
    ip: spec.ip,
    metadata: spec.metadata,
    os: spec.os,
    region: spec.region,
    started_at: iso(ctx.now()),
    transport: spec.transport,
  });
  for (const t of spec.tunnels) {
    const id = newId(ID_PREFIX.tunnel, ctx.now());
    ctx.store.put(TUNNELS, {
      id,
      session_id: sessionId,
      started_at: iso(ctx.now()),
      region: spec.region,
      metadata: t.metadata ?? '',
      forwards_to: t.forwards_to,
      ...(t.labels
        ? { labels: t.labels }
        : {
            proto: t.proto ?? 'https',
            public_url: t.public_url ?? `https://${id}.emulator.test`,
            // a tunnel with its own public URL is served by an ephemeral endpoint
            endpoint_id: newId(ID_PREFIX.endpoint, ctx.now()),
          }),
    });
  }
  const rec = { ...agent, session_id: sessionId, state: 'running', update_done_at: null };
  ctx.store.put(AGENTS, rec);
  return rec;
}

function disconnect(ctx: Ctx, agent: Rec): void {
  for (const t of ctx.store.all(TUNNELS).filter((t) => t.session_id === agent.session_id))
    ctx.store.delete(TUNNELS, t.id);
  if (agent.session_id) ctx.store.delete(SESSIONS, agent.session_id as string);
}

export function addAgent(ctx: Ctx, input: unknown): Rec {
  const spec = AgentSpec.parse(input);
  const existing = ctx.store.all(AGENTS).find((a) => a.name === spec.name);
  if (existing) {
    disconnect(ctx, existing);
    ctx.store.delete(AGENTS, existing.id);
  }
  return connect(ctx, {
    id: `agent_${spec.name}`,
    name: spec.name,
    spec,
    version: spec.agent_version,
    pending_version: null,
  });
}

export function removeAgent(ctx: Ctx, name: string): boolean {
  const a = ctx.store.all(AGENTS).find((x) => x.name === name);
  if (!a) return false;
  disconnect(ctx, a);
  ctx.store.delete(AGENTS, a.id);
  return true;
}

/** The agent's update state now: 'updating' flips to 'updated' once its duration passed. */
function updateState(ctx: Ctx, a: Rec): 'idle' | 'updating' | 'updated' {
  if (!a.pending_version) return 'idle';
  return ctx.now() >= (a.update_done_at as number) ? 'updated' : 'updating';
}

function agentOf(ctx: Ctx, sessionId: string): Rec {
  if (!ctx.store.get(SESSIONS, sessionId)) throw notFound('tunnel session', sessionId);
  const a = ctx.store.all(AGENTS).find((x) => x.session_id === sessionId);
  if (!a) throw notFound('tunnel session', sessionId);
  return a;
}

const renderSession = (ctx: Ctx, s: Rec) => ({
  id: s.id,
  uri: `${ctx.origin}/tunnel_sessions/${s.id}`,
  agent_version: s.agent_version,
  credential: ref(ctx, s.credential_id as string),
  ip: s.ip,
  metadata: s.metadata,
  os: s.os,
  region: s.region,
  started_at: s.started_at,
  transport: s.transport,
});

function renderTunnel(ctx: Ctx, t: Rec) {
  const { session_id, endpoint_id, ...rest } = t;
  const backends = t.labels
    ? ctx.store
        .all('tunnelGroupBackends')
        .filter((b) => {
          const want = b.labels as Record<string, string> | null;
          const have = t.labels as Record<string, string>;
          return (
            !!want && Object.keys(want).length > 0 && Object.entries(want).every(([k, v]) => have[k] === v)
          );
        })
        .map((b) => ref(ctx, b.id))
    : undefined;
  return {
    ...rest,
    tunnel_session: ref(ctx, session_id as string),
    ...(endpoint_id ? { endpoint: ref(ctx, endpoint_id as string) } : {}),
    ...(backends ? { backends } : {}),
  };
}

export function agentHandlers(): Record<string, Handler> {
  return {
    'tunnelSessions.list': (ctx, _p, _b, q) =>
      list(
        ctx,
        '/tunnel_sessions',
        'tunnel_sessions',
        ctx.store.all(SESSIONS).map((s) => renderSession(ctx, s)),
        q,
      ),
    'tunnelSessions.get': (ctx, p) => {
      const s = ctx.store.get(SESSIONS, p.id!);
      if (!s) throw notFound('tunnel session', p.id!);
      return { status: 200, body: renderSession(ctx, s) };
    },
    'tunnels.list': (ctx, _p, _b, q) =>
      list(
        ctx,
        '/tunnels',
        'tunnels',
        ctx.store.all(TUNNELS).map((t) => renderTunnel(ctx, t)),
        q,
      ),
    'tunnels.get': (ctx, p) => {
      const t = ctx.store.get(TUNNELS, p.id!);
      if (!t) throw notFound('tunnel', p.id!);
      return { status: 200, body: renderTunnel(ctx, t) };
    },
    'tunnelSessions.restart': (ctx, p) => {
      const a = agentOf(ctx, p.id!);
      if ((a.spec as AgentSpec).transport === 'ssh')
        throw refuse('ERR_SSH_SESSION_NO_RESTART', {}, `tunnel session ${p.id}`);
      if (/^win/i.test((a.spec as AgentSpec).os)) {
        throw refuse(
          'ERR_AGENT_RESTART_UNSUPPORTED',
          { REASON: 'restart is not supported on Windows agents' },
          `tunnel session ${p.id}`,
        );
      }
      const version =
        updateState(ctx, a) === 'updated' ? (a.pending_version as string) : (a.version as string);
      disconnect(ctx, a);
      connect(ctx, { ...a, version, pending_version: null });
      return { status: 204 };
    },
    'tunnelSessions.stop': (ctx, p) => {
      const a = agentOf(ctx, p.id!);
      disconnect(ctx, a);
      ctx.store.delete(AGENTS, a.id);
      return { status: 204 };
    },
    'tunnelSessions.update': (ctx, p) => {
      const a = agentOf(ctx, p.id!);
      const spec = a.spec as AgentSpec;
      if (spec.transport === 'ssh') throw refuse('ERR_SSH_SESSION_NO_UPDATE', {}, `tunnel session ${p.id}`);
      const state = updateState(ctx, a);
      if (state === 'updating') {
        throw refuse(
          'ERR_AGENT_ALREADY_UPDATING',
          { ERR: 'the agent is already updating' },
          `tunnel session ${p.id}`,
        );
      }
      if (state === 'updated') {
        throw refuse(
          'ERR_AGENT_UPDATED_NOT_RESTARTED',
          { ERR: `the agent already updated to ${a.pending_version} and must be restarted first` },
          `tunnel session ${p.id}`,
        );
      }
      if (spec.update.checks_disabled) {
        throw refuse(
          'ERR_AGENT_UPDATE_CHECKS_DISABLED',
          { REASON: "the agent's configuration disables update checks" },
          `tunnel session ${p.id}`,
        );
      }
      const current = a.version as string;
      const offered = spec.update.available_version;
      // Updates never cross a major version.
      if (!offered || !newer(offered, current) || semver(offered)[0] !== semver(current)[0]) {
        throw refuse(
          'ERR_AGENT_NO_UPDATE_AVAILABLE',
          {
            ERR: `no update is available for agent version ${current} (updates never cross a major version)`,
          },
          `tunnel session ${p.id}`,
        );
      }
      ctx.store.put(AGENTS, {
        ...a,
        pending_version: offered,
        update_done_at: ctx.now() + spec.update.duration_ms,
      });
      return { status: 204 };
    },
  };
}
