// One route per entry of the operations table. Each request goes through the same steps: whose
// key (request.ts), the account's budget, injected faults, the body and query checked against the
// wire schema, then the operation's handler acting on that account's records, and the answer
// counted by operation and status.
import { setTimeout as delay } from 'node:timers/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { flattenOperations } from '../api/operations.ts';
import type { AccountKey, AccountLimiter } from './accounts.ts';
import type { Ctx } from './context.ts';
import type { RequestCounters } from './counters.ts';
import { EmulatorError, refuse } from './errors.ts';
import type { Faults } from './faults.ts';
import { operationHandlers } from './handlers/index.ts';
import { authenticate, hasBody, parseBody, parseQuery } from './request.ts';
import type { Store } from './store.ts';

export interface OperationsOptions {
  keys: readonly AccountKey[];
  store: Store;
  faults: Faults;
  counters: RequestCounters;
  limiter?: AccountLimiter;
  rateLimitPerMinute?: number;
  /** The public origin (known once listening), for the uris in bodies. */
  origin: () => string;
  now: () => number;
}

const toFastifyPath = (p: string) => p.replace(/\{(\w+)\}/g, ':$1');

/** What a gateway in front of the API answers when it gives up waiting (not the API's JSON). */
const GATEWAY_TIMEOUT_PAGE =
  '<html><head><title>504 Gateway Time-out</title></head><body><h1>504 Gateway Time-out</h1></body></html>\n';

export function registerOperations(app: FastifyInstance, o: OperationsOptions): void {
  const { faults, limiter } = o;
  /** The account of each request that authenticated (its counters). */
  const accountOf = new WeakMap<FastifyRequest, string>();
  const handlers = operationHandlers();
  for (const [name, def] of flattenOperations()) {
    const handler = handlers[name];
    if (!handler) throw new Error(`emulator: no handler for operation ${name}`);
    app.route({
      method: def.method,
      url: toFastifyPath(def.path),
      config: { operation: name },
      handler: async (req, reply) => {
        const path = req.url.split('?')[0]!;
        const key = authenticate(o.keys, req);
        accountOf.set(req, key.account);
        const caller = { ownerId: key.ownerId, admin: key.admin, account: key.account };
        const retryAfter = limiter?.admit(caller.account, caller.ownerId);
        if (retryAfter !== undefined) {
          throw refuse('ERR_RATE_LIMITED', { MAX: o.rateLimitPerMinute!, INTERVAL: 'minute' }, undefined, {
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
        const ctx: Ctx = {
          store: o.store.account(caller.account),
          origin: originOf(req.headers.host, o.origin()),
          caller,
          now: o.now,
        };
        // the router has decoded the path parameters already: decoding again turns "%25" into a 500
        const params = req.params as Record<string, string>;
        if (fault.kind === 'late') {
          setTimeout(
            () =>
              void Promise.resolve()
                .then(() => handler(ctx, params, body, query))
                .catch(() => {}),
            fault.afterMs,
          ).unref();
          return reply.code(504).type('text/html').send(GATEWAY_TIMEOUT_PAGE);
        }
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
    if (req.url.startsWith('/_emulator')) return;
    const operation =
      (req.routeOptions.config as { operation?: string } | undefined)?.operation ?? 'unknown_path';
    o.counters.inc(operation, reply.statusCode, accountOf.get(req));
  });
}

/**
 * The origin the client asked (its Host header), so that the URIs in an answer, next_page_uri
 * above all, lead back the way the client came (localhost, a port mapping, a Service name)
 * rather than to the address the emulator listens on; the listening origin without a usable Host.
 */
export function originOf(host: string | undefined, listening: string): string {
  return host && /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/.test(host)
    ? `http://${host}`
    : listening;
}
