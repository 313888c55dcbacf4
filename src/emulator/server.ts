// The emulator's HTTP face: Fastify, one route per entry of the operations table, the
// wire schemas as the only validation, and every error in the API's one body shape.
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ID_PREFIX } from '../api/limits.ts';
import { type AnyOp, flattenOperations } from '../api/operations.ts';
import { type AccountKey, AccountLimiter, checkAccounts } from './accounts.ts';
import { registerAdmin } from './admin.ts';
import { addAgent, agentHandlers } from './agents.ts';
import type { Caller, Ctx } from './context.ts';
import { RequestCounters } from './counters.ts';
import { DEFAULT_ACCOUNT, DEFAULT_API_KEY } from './defaults.ts';
import { EmulatorError, errorBody, refuse } from './errors.ts';
import { Faults } from './faults.ts';
import { type Handler, resourceHandlers } from './resources.ts';
import { type AccountRecords, Store } from './store.ts';
import { zodToApiError } from './validation.ts';

export interface ApiKey {
  key: string;
  ownerId: string;
  admin: boolean;
}

/** `--keys-file`: {keys: [{key, owner_id, admin}]} in YAML or JSON. */
export const KeysFile = z.strictObject({
  keys: z
    .array(
      z.strictObject({
        key: z.string().min(1),
        owner_id: z.string().regex(/^(usr|bot)_[A-Za-z0-9]+$/, 'must be a user (usr_) or bot (bot_) id'),
        admin: z.boolean().default(false),
      }),
    )
    .min(1),
});

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

export { DEFAULT_ACCOUNT, DEFAULT_API_KEY, RequestCounters };

const SUPPORTED_VERSION = '2';
/** Longest path parameter (an id, an agent name) the router takes; 414 beyond. */
const MAX_PATH_SEGMENT = 100;

type FrameworkError = Error & { statusCode?: number; code?: string };

/** An answer written to the socket itself, where there is no reply object (parser errors, CONNECT). */
function endSocket(socket: Duplex, err: EmulatorError): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(err.body());
  socket.end(
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

const toFastifyPath = (p: string) => p.replace(/\{(\w+)\}/g, ':$1');
const pathRegex = (p: string) => new RegExp(`^${p.replace(/\{\w+\}/g, '[^/]+')}/?$`);

export async function startEmulator(opts: EmulatorOptions = {}): Promise<Emulator> {
  const keys: AccountKey[] = (opts.apiKeys?.length ? opts.apiKeys : [DEFAULT_API_KEY]).map((k) => ({
    ...(typeof k === 'string' ? { key: k, ownerId: 'usr_emulator', admin: true } : k),
    account: DEFAULT_ACCOUNT,
  }));
  const extra = Object.entries(opts.accounts ?? {});
  checkAccounts(
    extra,
    keys.map((k) => k.key),
  );
  for (const [account, key] of extra) keys.push({ key, ownerId: 'usr_emulator', admin: true, account });
  const accountNames = [DEFAULT_ACCOUNT, ...extra.map(([name]) => name)];
  const adminKey = opts.adminKey ?? keys[0]!.key;
  const agents = (opts.agents ?? []).map((a) => {
    const { account = DEFAULT_ACCOUNT, ...spec } = (a ?? {}) as { account?: unknown };
    if (typeof account !== 'string' || !accountNames.includes(account))
      throw new Error(
        `agents: an agent names account ${JSON.stringify(account)}, which is not one of this emulator's (${accountNames.join(', ')})`,
      );
    return { account, spec };
  });
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
  const limiter = opts.rateLimitPerMinute ? new AccountLimiter(opts.rateLimitPerMinute) : undefined;
  const counters = new RequestCounters();
  /** The account of each request that authenticated (its counters). */
  const accountOf = new WeakMap<FastifyRequest, string>();

  const bodyLimit = opts.bodyLimit ?? 256 * 1024;
  /** Sockets whose current request's headers arrived: an end of input now is inside its body. */
  const awaitingBody = new WeakSet<object>();
  let closing = false;
  const app = Fastify({
    logger: opts.logger ?? false,
    // Errors the HTTP parser finds before any route runs (a malformed request, headers or a
    // URI too large) still get the API's error body.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => {
      // the connection ended inside a body (its headers complete): a body shorter than its
      // Content-Length, which the public API calls an unreadable body (ERR_NGROK_212)
      if (err.code === 'HPE_INVALID_EOF_STATE' && awaitingBody.has(socket))
        return endSocket(
          socket,
          refuse('ERR_INVALID_CONTENT_LENGTH', {}, 'the body ended before its Content-Length'),
        );
      const [status, code, msg] =
        err.code === 'HPE_HEADER_OVERFLOW'
          ? [431, 'ERR_HEADERS_TOO_LARGE', 'request header fields too large']
          : err.code === 'HPE_URI_TOO_LONG'
            ? [414, 'ERR_URI_TOO_LONG', 'the request URI is too long']
            : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
              ? [408, 'ERR_REQUEST_TIMEOUT', 'the request took too long to arrive']
              : [400, 'ERR_BAD_REQUEST', 'the request is not valid HTTP'];
      endSocket(socket, new EmulatorError(status, code, msg));
    },
    // What the router refuses before any route or hook runs (a malformed percent-encoding in
    // the path, an overlong path segment) would otherwise get Fastify's own body.
    frameworkErrors: (err, req, reply) => send(reply, apiError(err, req)),
    // Node answers a request without Host itself (an empty 400): the hook below does, in the API's body.
    http: { requireHostHeader: false },
    // Requests that arrive while closing: Fastify's own 503 body otherwise (the hook below answers).
    return503OnClosing: false,
    bodyLimit,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_SEGMENT },
  });
  // Node's own answers, outside Fastify: an Expect it cannot meet (417) and CONNECT (the
  // socket would just be closed).
  app.server.on('checkExpectation', (req, res) => {
    const err = new EmulatorError(
      417,
      'ERR_EXPECTATION_FAILED',
      `Expect: ${String(req.headers.expect)} is not supported (only 100-continue)`,
    );
    const body = JSON.stringify(err.body());
    res.writeHead(err.status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    res.end(body);
  });
  app.server.on('connect', (req: { url?: string }, socket: Duplex) =>
    endSocket(
      socket,
      new EmulatorError(405, 'ERR_METHOD_NOT_ALLOWED', `CONNECT is not allowed on ${req.url ?? ''}`),
    ),
  );
  // Only JSON bodies: Fastify's built-in text/plain parser would hand a string to the handlers.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    if (body === '') return done(null, undefined);
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(
        refuse('ERR_INVALID_JSON', { CTYPE: 'application/json' }, 'the request body is not valid JSON'),
        undefined,
      );
    }
  });

  const send = (reply: FastifyReply, err: EmulatorError) => {
    reply.code(err.status).headers(err.headers).send(err.body());
  };
  /** Any error, the framework's too, as the API's error. */
  const apiError = (err: FrameworkError, req: FastifyRequest): EmulatorError => {
    if (err instanceof EmulatorError) return err;
    const path = req.url.split('?')[0]!;
    switch (err.code) {
      case 'FST_ERR_BAD_URL':
        return new EmulatorError(
          400,
          'ERR_INVALID_PATH',
          `the path ${path} is not valid: it has a malformed percent-encoding`,
        );
      case 'FST_ERR_MAX_PARAM_LENGTH':
        return new EmulatorError(
          414,
          'ERR_URI_TOO_LONG',
          `a segment of the path is longer than ${MAX_PATH_SEGMENT} characters`,
        );
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return refuse('ERR_INVALID_CONTENT_LENGTH', {}, 'the request body does not match its Content-Length');
    }
    const status = err.statusCode ?? 500;
    if (status === 413)
      return new EmulatorError(
        413,
        'ERR_BODY_TOO_LARGE',
        `the request body is larger than ${bodyLimit} bytes`,
      );
    if (status === 415) {
      const type = req.headers['content-type'];
      return type === undefined
        ? refuse('ERR_MISSING_CONTENT_TYPE', {}, 'request bodies must be application/json')
        : refuse('ERR_UNSUPPORTED_MEDIA_TYPE', { CTYPE: type }, 'request bodies must be application/json');
    }
    if (status >= 400 && status < 500) {
      const code =
        status === 400
          ? 'ERR_BAD_REQUEST'
          : `ERR_${STATUS_CODES[status]?.toUpperCase().replace(/\W+/g, '_') ?? status}`;
      return new EmulatorError(status, code, err.message);
    }
    app.log.error(err);
    return new EmulatorError(500, 'ERR_INTERNAL', 'internal error');
  };
  app.setErrorHandler((err: FrameworkError, req, reply) => send(reply, apiError(err, req)));
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', async (req, reply) => {
    awaitingBody.add(req.raw.socket);
    if (closing) {
      reply.header('connection', 'close');
      throw new EmulatorError(503, 'ERR_SERVICE_UNAVAILABLE', 'the emulator is shutting down');
    }
    if (req.raw.httpVersion === '1.1' && req.headers.host === undefined)
      throw new EmulatorError(400, 'ERR_BAD_REQUEST', 'missing Host header (HTTP/1.1 requires it)');
  });

  const table = flattenOperations();
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0]!;
    const allowed = table.filter(([, d]) => pathRegex(d.path).test(path)).map(([, d]) => d.method);
    if (allowed.length) {
      reply.header('allow', [...new Set(allowed)].join(', '));
      return send(
        reply,
        new EmulatorError(405, 'ERR_METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${path}`),
      );
    }
    // not a missing resource: a path the API does not have (clients must not read it as "deleted")
    return send(
      reply,
      new EmulatorError(
        404,
        'ERR_NO_SUCH_PATH',
        `the API has no path ${req.method} ${path}: check the API reference`,
      ),
    );
  });

  const authenticate = (req: FastifyRequest): Caller => {
    const auth = req.headers.authorization;
    if (!auth) throw refuse('ERR_UNAUTHORIZED', {}, 'missing Authorization: Bearer <API key> header');
    const m = /^Bearer (.+)$/.exec(auth);
    if (!m)
      throw refuse(
        'ERR_BAD_AUTHORIZATION',
        { VAL: auth.split(' ')[0] ?? '' },
        'use Authorization: Bearer <API key>',
      );
    // an API key is printable ASCII without spaces: anything else cannot be one
    if (!/^[\x21-\x7e]+$/.test(m[1]!)) throw refuse('ERR_MALFORMED_CREDENTIAL', { TOKEN: redact(m[1]!) });
    const key = keys.find((k) => k.key === m[1]);
    if (!key) throw refuse('ERR_FORBIDDEN', { TOKEN: redact(m[1]!) });
    const version = req.headers['service-version'] || req.headers['ngrok-version'];
    if (version === undefined || version === '')
      throw refuse('ERR_MISSING_VERSION', { SUPPORTED: SUPPORTED_VERSION }, 'send Service-Version: 2');
    if (version !== SUPPORTED_VERSION)
      throw refuse('ERR_UNSUPPORTED_VERSION', { VERSION: String(version), SUPPORTED: SUPPORTED_VERSION });
    accountOf.set(req, key.account);
    return { ownerId: key.ownerId, admin: key.admin, account: key.account };
  };

  const handlers: Record<string, Handler> = { ...resourceHandlers(), ...agentHandlers() };
  for (const [name, def] of table) {
    const handler = handlers[name];
    if (!handler) throw new Error(`emulator: no handler for operation ${name}`);
    app.route({
      method: def.method,
      url: toFastifyPath(def.path),
      config: { operation: name },
      handler: async (req, reply) => {
        const path = req.url.split('?')[0]!;
        const caller = authenticate(req);
        const retryAfter = limiter?.admit(caller.account, caller.ownerId);
        if (retryAfter !== undefined) {
          throw refuse('ERR_RATE_LIMITED', { MAX: opts.rateLimitPerMinute!, INTERVAL: 'minute' }, undefined, {
            'retry-after': String(retryAfter),
          });
        }
        const wait = faults.latency(req.method, path, caller.account);
        if (wait) await delay(wait);
        const fault = faults.before(req.method, path, caller.account);
        if (fault.kind === 'error')
          throw new EmulatorError(fault.status, 'ERR_INJECTED', `injected fault: HTTP ${fault.status}`);
        if (fault.kind === 'rate-limit') {
          throw refuse('ERR_RATE_LIMITED', { MAX: 120, INTERVAL: 'minute' }, 'injected fault', {
            'retry-after': String(fault.retryAfter),
          });
        }
        if (!(def.kind === 'op' && def.body) && hasBody(req))
          throw refuse('ERR_UNEXPECTED_BODY', { METHOD: req.method });
        const body = parseBody(name, def, req.body);
        const query = parseQuery(def, req.query as Record<string, string | string[]>, req.url);
        const ctx: Ctx = { store: store.account(caller.account), origin, caller, now };
        // the router has decoded the path parameters already: decoding again turns "%25" into a 500
        const params = req.params as Record<string, string>;
        const result = await handler(ctx, params, body, query);
        if (faults.dropAfter(req.method, path, caller.account)) {
          reply.hijack();
          req.raw.socket.destroy();
          return;
        }
        reply.code(result.status);
        return result.status === 204 ? reply.send() : reply.send(result.body);
      },
    });
  }

  // every API request counted by operation and status; the admin endpoints are not
  app.addHook('onResponse', async (req, reply) => {
    awaitingBody.delete(req.raw.socket);
    if (req.url.startsWith('/_emulator')) return;
    const operation =
      (req.routeOptions.config as { operation?: string } | undefined)?.operation ?? 'unknown_path';
    counters.inc(operation, reply.statusCode, accountOf.get(req));
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

  const address = await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 0 });
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

/** A request that carries a body (a Content-Length above 0, or a chunked one). */
const hasBody = (req: FastifyRequest) =>
  Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;

/** A redacted credential for a message: enough to recognise it, never the whole. */
const redact = (token: string) => (token.length > 8 ? `${token.slice(0, 4)}...` : '...');

function parseBody(operation: string, def: AnyOp, raw: unknown): Record<string, unknown> {
  if (def.kind !== 'op' || !def.body) return {};
  const input = raw === undefined ? {} : raw;
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw refuse('ERR_INVALID_BODY', { CTYPE: 'application/json' }, 'the request body must be a JSON object');
  }
  const r = (def.body as z.ZodType).safeParse(input, { reportInput: true });
  if (!r.success) throw zodToApiError(r.error, { operation, schema: def.body as z.ZodType });
  return r.data as Record<string, unknown>;
}

const LIST_PARAMETERS = ['limit', 'before_id', 'filter'];
const LIMIT_MAX = 100;

/** The id prefix of what each list holds (before_id must be one of them). */
const LIST_ID_PREFIX: Record<string, string> = {
  '/ip_policies': ID_PREFIX.ipPolicy,
  '/ip_policy_rules': ID_PREFIX.ipPolicyRule,
  '/ip_restrictions': ID_PREFIX.ipRestriction,
  '/backends/tunnel_group': ID_PREFIX.tunnelGroupBackend,
  '/backends/weighted': ID_PREFIX.weightedBackend,
  '/ssh_credentials': ID_PREFIX.sshCredential,
  '/certificate_authorities': ID_PREFIX.certificateAuthority,
  '/tunnel_sessions': ID_PREFIX.tunnelSession,
  '/tunnels': ID_PREFIX.tunnel,
  '/edges/https': ID_PREFIX.httpsEdge,
  '/edges/tcp': ID_PREFIX.tcpEdge,
  '/edges/tls': ID_PREFIX.tlsEdge,
};

function parseQuery(def: AnyOp, raw: Record<string, string | string[]>, url: string): Record<string, string> {
  // the query as sent: a malformed percent-encoding is refused, never read as something else
  const search = url.includes('?') ? url.slice(url.indexOf('?') + 1) : '';
  for (const part of search.split('&')) {
    try {
      decodeURIComponent(part.replaceAll('+', ' '));
    } catch {
      throw refuse('ERR_INVALID_QUERY', { ERR: `malformed percent-encoding in ${part}` });
    }
  }
  // never ignore a query parameter: one this endpoint does not know is refused
  const allowed = def.kind === 'list' ? LIST_PARAMETERS : [];
  const unknown = Object.keys(raw).filter((k) => !allowed.includes(k));
  if (unknown.length) {
    throw refuse('ERR_UNKNOWN_QUERY_PARAMETER', {
      UNKNOWN: unknown.join(', '),
      SUPPORTED: allowed.join(', ') || 'none',
    });
  }
  const repeated = Object.entries(raw).find(([, v]) => Array.isArray(v));
  if (repeated) {
    const values = repeated[1] as string[];
    throw refuse('ERR_REPEATED_QUERY_PARAMETER', {
      NAME: repeated[0],
      COUNT: values.length,
      VALUES: values.join(', '),
    });
  }
  if (def.kind !== 'list') return {};
  const q = raw as Record<string, string>;
  if (q.limit !== undefined) {
    if (!/^(0|[1-9]\d*)$/.test(q.limit))
      throw refuse('ERR_LIMIT_NOT_A_NUMBER', { MAX: LIMIT_MAX, VAL: q.limit });
    if (Number(q.limit) < 1 || Number(q.limit) > LIMIT_MAX)
      throw refuse('ERR_INVALID_LIMIT', { MAX: LIMIT_MAX, VAL: q.limit });
  }
  if (q.before_id !== undefined) {
    if (!/^[a-z]+_[A-Za-z0-9]+$/.test(q.before_id))
      throw refuse('ERR_INVALID_ID', { ID: q.before_id }, 'before_id');
    const prefix = LIST_ID_PREFIX[def.path];
    if (prefix && !q.before_id.startsWith(`${prefix}_`))
      throw refuse('ERR_ID_WRONG_PREFIX', { VAL: q.before_id, PREFIX: prefix }, 'before_id');
  }
  return q;
}

export { errorBody };
