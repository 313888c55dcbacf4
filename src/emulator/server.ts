// The emulator's HTTP face: Fastify, one route per entry of the operations table, the
// wire schemas as the only validation, and every error in the API's one body shape.
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ID_PREFIX } from '../api/limits.ts';
import { type AnyOp, flattenOperations } from '../api/operations.ts';
import { AgentSpec, addAgent, agentHandlers, removeAgent } from './agents.ts';
import type { Caller, Ctx } from './context.ts';
import { DEFAULT_API_KEY } from './defaults.ts';
import { EmulatorError, errorBody, refuse } from './errors.ts';
import { FaultConfig, Faults } from './faults.ts';
import { STORED_RECORDS } from './records.ts';
import { type Handler, resourceHandlers } from './resources.ts';
import { Store } from './store.ts';
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
  /** API keys; a plain string is a key owned by usr_emulator with admin rights. */
  apiKeys?: (ApiKey | string)[];
  /** Key for /_emulator/* (agents, faults, state); defaults to the first API key. */
  adminKey?: string;
  dataFile?: string;
  /** With a corrupt data file: keep what is readable (the original is copied aside) instead of refusing. */
  repair?: boolean;
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
  app: FastifyInstance;
  store: Store;
  faults: Faults;
  /** API calls by operation and status (also GET /_emulator/metrics). */
  counters: RequestCounters;
  /** Moves the emulator's clock forward (agent update timings). */
  advanceClock(ms: number): void;
  close(): Promise<void>;
}

export { DEFAULT_API_KEY };

const MAX_CLOCK_ADVANCE_MS = 365 * 24 * 3_600_000;
const MAX_CLOCK = Date.UTC(9999, 11, 31);
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
  const keys: ApiKey[] = (opts.apiKeys?.length ? opts.apiKeys : [DEFAULT_API_KEY]).map((k) =>
    typeof k === 'string' ? { key: k, ownerId: 'usr_emulator', admin: true } : k,
  );
  const adminKey = opts.adminKey ?? keys[0]!.key;
  const store = new Store(opts.dataFile, {
    repair: opts.repair,
    warn: (m) => process.stderr.write(`emulator: ${m}\n`),
  });
  const faults = new Faults();
  if (opts.faults) faults.set(opts.faults);
  let clockOffset = 0;
  const now = () => (opts.now ?? Date.now)() + clockOffset;
  let origin = '';
  const limiter = opts.rateLimitPerMinute ? new AccountLimiter(opts.rateLimitPerMinute) : undefined;
  const counters = new RequestCounters();

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
    return { ownerId: key.ownerId, admin: key.admin };
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
        const retryAfter = limiter?.admit(caller.ownerId);
        if (retryAfter !== undefined) {
          throw refuse('ERR_RATE_LIMITED', { MAX: opts.rateLimitPerMinute!, INTERVAL: 'minute' }, undefined, {
            'retry-after': String(retryAfter),
          });
        }
        const wait = faults.latency(req.method, path);
        if (wait) await delay(wait);
        const fault = faults.before(req.method, path);
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
        const ctx: Ctx = { store, origin, caller, now };
        // the router has decoded the path parameters already: decoding again turns "%25" into a 500
        const params = req.params as Record<string, string>;
        const result = await handler(ctx, params, body, query);
        if (faults.dropAfter(req.method, path)) {
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
    counters.inc(operation, reply.statusCode);
  });

  registerAdmin(app, {
    adminKey,
    counters,
    store,
    faults,
    ctx: () => ({ store, origin, caller: { ownerId: keys[0]!.ownerId, admin: true }, now }),
    advance: (ms) => {
      clockOffset += ms;
    },
  });

  const address = await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 0 });
  origin = address.replace('[::1]', 'localhost');
  const baseCtx = (): Ctx => ({ store, origin, caller: { ownerId: keys[0]!.ownerId, admin: true }, now });
  for (const a of opts.agents ?? []) addAgent(baseCtx(), a);

  return {
    url: origin,
    apiKey: keys[0]!.key,
    adminKey,
    app,
    store,
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

/** A rolling 60-second window per account: at most `perMinute` requests in any minute. */
class AccountLimiter {
  private readonly perMinute: number;
  private readonly windows = new Map<string, number[]>();
  constructor(perMinute: number) {
    this.perMinute = perMinute;
  }
  /** undefined: admitted; otherwise the seconds until a request would be. */
  admit(account: string, now = Date.now()): number | undefined {
    const w = this.windows.get(account) ?? [];
    this.windows.set(account, w);
    while (w.length && w[0]! <= now - 60_000) w.shift();
    if (w.length >= this.perMinute) return Math.max(1, Math.ceil((w[0]! + 60_000 - now) / 1000));
    w.push(now);
    return undefined;
  }
}

/** emulator_requests_total{operation, status}: API calls counted without a proxy. */
export class RequestCounters {
  private readonly counts = new Map<string, number>();
  inc(operation: string, status: number): void {
    const k = `${operation}\t${status}`;
    this.counts.set(k, (this.counts.get(k) ?? 0) + 1);
  }
  /** Calls of an operation (any status), or of every operation. */
  total(operation?: string): number {
    let n = 0;
    for (const [k, v] of this.counts) if (!operation || k.startsWith(`${operation}\t`)) n += v;
    return n;
  }
  /** Calls by "operation status", e.g. {"ipPolicies.list 200": 3}. */
  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.counts].map(([k, v]) => [k.replace('\t', ' '), v]));
  }
  byStatus(status: number): number {
    let n = 0;
    for (const [k, v] of this.counts) if (k.endsWith(`\t${status}`)) n += v;
    return n;
  }
  reset(): void {
    this.counts.clear();
  }
  prometheus(): string {
    const lines = [
      "# HELP emulator_requests_total API requests answered, by operation (the operations table's name) and HTTP status",
      '# TYPE emulator_requests_total counter',
    ];
    for (const [k, v] of [...this.counts].sort()) {
      const [operation, status] = k.split('\t');
      lines.push(`emulator_requests_total{operation="${operation}",status="${status}"} ${v}`);
    }
    return `${lines.join('\n')}\n`;
  }
}

function registerAdmin(
  app: FastifyInstance,
  o: {
    adminKey: string;
    store: Store;
    faults: Faults;
    counters: RequestCounters;
    ctx: () => Ctx;
    advance: (ms: number) => void;
  },
) {
  app.register(
    async (admin) => {
      admin.addHook('onRequest', async (req) => {
        if (req.headers.authorization !== `Bearer ${o.adminKey}`) {
          throw new EmulatorError(401, 'ERR_UNAUTHORIZED', 'the emulator admin endpoints need the admin key');
        }
      });
      admin.get('/state', async () => {
        const out: Record<string, unknown[]> = {};
        for (const c of Object.keys(STORED_RECORDS)) {
          out[c] = o.store.all(c);
        }
        return out;
      });
      admin.get('/agents', async () => ({ agents: o.store.all('agents') }));
      admin.get('/metrics', async (_req, reply) =>
        reply.header('content-type', 'text/plain; version=0.0.4').send(o.counters.prometheus()),
      );
      admin.post('/agents', async (req, reply) => {
        const r = AgentSpec.safeParse(req.body ?? {});
        if (!r.success) throw zodToApiError(r.error);
        const agent = addAgent(o.ctx(), r.data);
        reply.code(201);
        return { name: agent.name, session_id: agent.session_id };
      });
      admin.delete('/agents/:name', async (req, reply) => {
        const { name } = req.params as { name: string };
        if (!removeAgent(o.ctx(), name))
          throw new EmulatorError(404, 'ERR_NOT_FOUND', `no agent named ${name}`);
        reply.code(204).send();
      });
      admin.get('/faults', async () => o.faults.config);
      admin.put('/faults', async (req) => {
        const r = FaultConfig.safeParse(req.body ?? {});
        if (!r.success) throw zodToApiError(r.error);
        return o.faults.set(r.data);
      });
      admin.delete('/faults', async (_req, reply) => {
        o.faults.set({});
        reply.code(204).send();
      });
      admin.post('/clock', async (req) => {
        const ms = Number((req.body as { advanceMs?: unknown } | undefined)?.advanceMs);
        if (!Number.isFinite(ms) || ms < 0 || ms > MAX_CLOCK_ADVANCE_MS)
          throw new EmulatorError(
            400,
            'ERR_INVALID_BODY',
            `advanceMs: must be a number from 0 to ${MAX_CLOCK_ADVANCE_MS} (one year)`,
          );
        // the clock must stay a valid date: every timestamp the emulator writes depends on it
        if (!Number.isFinite(new Date(o.ctx().now() + ms).getTime()) || o.ctx().now() + ms > MAX_CLOCK)
          throw new EmulatorError(400, 'ERR_INVALID_BODY', 'advanceMs: the clock would pass the year 9999');
        o.advance(ms);
        return { now: new Date(o.ctx().now()).toISOString() };
      });
      admin.post('/reset', async (_req, reply) => {
        o.store.clear();
        reply.code(204).send();
      });
    },
    { prefix: '/_emulator' },
  );
}

export { errorBody };
