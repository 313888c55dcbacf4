// The emulator's own endpoints under /_emulator (Bearer the admin key): state, simulated agents,
// faults, the clock, a reset and the request counters. What holds records (state, agents, reset)
// acts on one account: `?account=NAME`, the default account without it (reset: every account).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AgentSpec, addAgent, removeAgent } from './agents.ts';
import type { Ctx } from './context.ts';
import type { RequestCounters } from './counters.ts';
import { DEFAULT_ACCOUNT } from './defaults.ts';
import { EmulatorError } from './errors.ts';
import { FaultConfig, type Faults } from './faults.ts';
import { STORED_RECORDS } from './records.ts';
import type { Store } from './store.ts';
import { zodToApiError } from './validation.ts';

const MAX_CLOCK_ADVANCE_MS = 365 * 24 * 3_600_000;
const MAX_CLOCK = Date.UTC(9999, 11, 31);

export interface AdminOptions {
  adminKey: string;
  store: Store;
  faults: Faults;
  counters: RequestCounters;
  /** The accounts the emulator serves, the default one first. */
  accounts: readonly string[];
  /** A context acting for an account (as its admin). */
  ctx: (account: string) => Ctx;
  advance: (ms: number) => void;
}

export function registerAdmin(app: FastifyInstance, o: AdminOptions) {
  const unknown = (names: readonly string[]) => names.filter((n) => !o.accounts.includes(n));
  /** The account a request names (`?account=`), the default one without. */
  const accountOf = (req: FastifyRequest): string => {
    const name = (req.query as { account?: unknown }).account;
    if (name === undefined) return DEFAULT_ACCOUNT;
    if (typeof name !== 'string' || unknown([name]).length)
      throw new EmulatorError(
        404,
        'ERR_NOT_FOUND',
        `no account named ${JSON.stringify(name)} (accounts: ${o.accounts.join(', ')})`,
      );
    return name;
  };
  app.register(
    async (admin) => {
      admin.addHook('onRequest', async (req) => {
        if (req.headers.authorization !== `Bearer ${o.adminKey}`) {
          throw new EmulatorError(401, 'ERR_UNAUTHORIZED', 'the emulator admin endpoints need the admin key');
        }
      });
      admin.get('/state', async (req) => {
        const records = o.store.account(accountOf(req));
        const out: Record<string, unknown[]> = {};
        for (const c of Object.keys(STORED_RECORDS)) out[c] = records.all(c);
        return out;
      });
      admin.get('/agents', async (req) => ({ agents: o.store.account(accountOf(req)).all('agents') }));
      admin.get('/metrics', async (_req, reply) =>
        reply
          .header('content-type', 'text/plain; version=0.0.4')
          .send(o.counters.prometheus(o.accounts.length > 1)),
      );
      admin.post('/agents', async (req, reply) => {
        const ctx = o.ctx(accountOf(req));
        const r = AgentSpec.safeParse(req.body ?? {});
        if (!r.success) throw zodToApiError(r.error);
        const agent = addAgent(ctx, r.data);
        reply.code(201);
        return { name: agent.name, session_id: agent.session_id };
      });
      admin.delete('/agents/:name', async (req, reply) => {
        const { name } = req.params as { name: string };
        if (!removeAgent(o.ctx(accountOf(req)), name))
          throw new EmulatorError(404, 'ERR_NOT_FOUND', `no agent named ${name}`);
        reply.code(204).send();
      });
      admin.get('/faults', async () => o.faults.config);
      admin.put('/faults', async (req) => {
        const r = FaultConfig.safeParse(req.body ?? {});
        if (!r.success) throw zodToApiError(r.error);
        const missing = unknown(r.data.accounts ?? []);
        if (missing.length)
          throw new EmulatorError(
            400,
            'ERR_INVALID_BODY',
            `accounts: ${missing.join(', ')} is not an account of this emulator (accounts: ${o.accounts.join(', ')})`,
          );
        return o.faults.set(r.data);
      });
      admin.delete('/faults', async (_req, reply) => {
        o.faults.set({});
        reply.code(204).send();
      });
      admin.post('/clock', async (req) => {
        const ms = Number((req.body as { advanceMs?: unknown } | undefined)?.advanceMs);
        const now = o.ctx(DEFAULT_ACCOUNT).now();
        if (!Number.isFinite(ms) || ms < 0 || ms > MAX_CLOCK_ADVANCE_MS)
          throw new EmulatorError(
            400,
            'ERR_INVALID_BODY',
            `advanceMs: must be a number from 0 to ${MAX_CLOCK_ADVANCE_MS} (one year)`,
          );
        // the clock must stay a valid date: every timestamp the emulator writes depends on it
        if (!Number.isFinite(new Date(now + ms).getTime()) || now + ms > MAX_CLOCK)
          throw new EmulatorError(400, 'ERR_INVALID_BODY', 'advanceMs: the clock would pass the year 9999');
        o.advance(ms);
        return { now: new Date(o.ctx(DEFAULT_ACCOUNT).now()).toISOString() };
      });
      admin.post('/reset', async (req, reply) => {
        if ((req.query as { account?: unknown }).account === undefined) o.store.clear();
        else o.store.account(accountOf(req)).clear();
        reply.code(204).send();
      });
    },
    { prefix: '/_emulator' },
  );
}
