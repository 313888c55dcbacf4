// The emulator put together: its accounts' keys, the store, faults, the HTTP server (http.ts)
// with one route per operation (operations.ts) and the admin plane (admin.ts), listening.
// Layers, each importing only those below it: records <- store <- context <- handlers/ <- server.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { AccountLimiter, type ApiKey, accountKeys } from './accounts.ts';
import { registerAdmin } from './admin.ts';
import type { Ctx } from './context.ts';
import { RequestCounters } from './counters.ts';
import { DEFAULT_ACCOUNT } from './defaults.ts';
import { Faults } from './faults.ts';
import { addAgent } from './handlers/agents.ts';
import { createApp } from './http.ts';
import { registerOperations } from './operations.ts';
import { type AccountRecords, Store } from './store.ts';

export interface EmulatorOptions {
  host?: string;
  port?: number;
  /** API keys of the default account; a plain string is a key owned by usr_emulator with admin rights. */
  apiKeys?: (ApiKey | string)[];
  /**
   * More accounts, by name: each key's own records and own request budget (name `default` is
   * the account of `apiKeys`). Its key is owned by usr_emulator with admin rights.
   */
  accounts?: Record<string, string>;
  /** Key for /_emulator/* (agents, faults, state); defaults to the first API key. */
  adminKey?: string;
  dataFile?: string;
  /** With a corrupt data file: keep what is readable (the original is copied aside) instead of refusing. */
  repair?: boolean;
  /** Simulated agents, in the default account unless one names another (`account`). */
  agents?: unknown[];
  faults?: unknown;
  /** Requests per minute each account may make (a rolling 60-second window); beyond it 429. Off by default. */
  rateLimitPerMinute?: number;
  /** Request body limit in bytes (413 above it). */
  bodyLimit?: number;
  logger?: boolean;
  now?: () => number;
}

export interface Emulator {
  url: string;
  apiKey: string;
  adminKey: string;
  /** Every account's key by name (the default account's first key under `default`). */
  accounts: Record<string, string>;
  app: FastifyInstance;
  /** The records of every account; its own get/all/put/delete are the default account's. */
  store: Store;
  /** One account's records. */
  storeOf(account: string): AccountRecords;
  faults: Faults;
  /** API calls by operation and status (also GET /_emulator/metrics). */
  counters: RequestCounters;
  /** Moves the emulator's clock forward (agent update timings). */
  advanceClock(ms: number): void;
  close(): Promise<void>;
}

/** The agents to start, each with the account it runs in (the default one unless it names another). */
function agentsOf(agents: readonly unknown[], accountNames: readonly string[]) {
  return agents.map((a) => {
    const { account = DEFAULT_ACCOUNT, ...spec } = (a ?? {}) as { account?: unknown };
    if (typeof account !== 'string' || !accountNames.includes(account))
      throw new Error(
        `agents: an agent names account ${JSON.stringify(account)}, which is not one of this emulator's (${accountNames.join(', ')})`,
      );
    return { account, spec };
  });
}

export async function startEmulator(opts: EmulatorOptions = {}): Promise<Emulator> {
  const keys = accountKeys(opts.apiKeys, opts.accounts);
  const accountNames = [DEFAULT_ACCOUNT, ...Object.keys(opts.accounts ?? {})];
  // the admin endpoints read and reset every account: the first key serves them only when it is
  // the one account's admin key; otherwise they need --admin-key (a key nobody has: off)
  const first = keys[0]!;
  const oneAccount = !Object.keys(opts.accounts ?? {}).length;
  const adminKey =
    opts.adminKey ?? (oneAccount && first.admin ? first.key : randomBytes(24).toString('base64url'));
  const agents = agentsOf(opts.agents ?? [], accountNames);
  const faults = new Faults();
  if (opts.faults) faults.set(opts.faults);
  const faulted = (faults.config.accounts ?? []).filter((n) => !accountNames.includes(n));
  if (faulted.length)
    throw new Error(`faults: accounts: ${faulted.join(', ')} is not an account of this emulator`);
  const warn = (m: string) => process.stderr.write(`emulator: ${m}\n`);
  const store = new Store(opts.dataFile, { repair: opts.repair, warn });
  // records of an account not given now stay in the data file, served again once it is
  const idle = store.accountNames().filter((n) => !accountNames.includes(n));
  if (idle.length)
    warn(
      `data file ${opts.dataFile}: records of account(s) ${idle.join(', ')} are kept but not served (no --account for them)`,
    );
  let clockOffset = 0;
  const now = () => (opts.now ?? Date.now)() + clockOffset;
  let origin = '';
  const counters = new RequestCounters();

  const app = createApp({ logger: opts.logger, bodyLimit: opts.bodyLimit ?? 256 * 1024 });
  registerOperations(app, {
    keys,
    store,
    faults,
    counters,
    limiter: opts.rateLimitPerMinute ? new AccountLimiter(opts.rateLimitPerMinute) : undefined,
    rateLimitPerMinute: opts.rateLimitPerMinute,
    origin: () => origin,
    now,
  });
  /** Acting for an account as its admin (the emulator's own endpoints, agents at start). */
  const adminCtx = (account: string): Ctx => ({
    store: store.account(account),
    origin,
    caller: { ownerId: keys.find((k) => k.account === account)!.ownerId, admin: true, account },
    now,
  });
  registerAdmin(app, {
    adminKey,
    counters,
    store,
    faults,
    accounts: accountNames,
    ctx: adminCtx,
    advance: (ms) => {
      clockOffset += ms;
    },
  });

  let address: string;
  try {
    address = await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 0 });
  } catch (err) {
    // a busy port: the data file is let go for the emulator that has it, or the next
    store.close();
    throw err;
  }
  origin = address.replace('[::1]', 'localhost');
  for (const a of agents) addAgent(adminCtx(a.account), a.spec);

  return {
    url: origin,
    apiKey: keys[0]!.key,
    adminKey,
    accounts: Object.fromEntries(accountNames.map((n) => [n, keys.find((k) => k.account === n)!.key])),
    app,
    store,
    storeOf: (account) => store.account(account),
    faults,
    counters,
    advanceClock: (ms) => {
      clockOffset += ms;
    },
    close: async () => {
      await app.close();
      store.close();
    },
  };
}
