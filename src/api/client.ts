// The typed client: one method per entry of the operations table, derived, never listed.
import type { z } from 'zod';
import { ApiError } from './errors.ts';
import { LIST_LIMIT_MAX } from './limits.ts';
import {
  type AnyOp,
  type ListDef,
  type OpDef,
  type Operations,
  operations,
  pathParams,
} from './operations.ts';
import type { Priority } from './rate-limiter.ts';
import { Transport, type TransportOptions } from './transport.ts';

export interface CallOptions {
  signal?: AbortSignal;
}
export interface ListOptions extends CallOptions {
  /** Page size, 1..100. */
  limit?: number;
  /** Server-side filter: a CEL expression over one resource, `obj` (e.g. `obj.description == "web"`). */
  filter?: string;
  /** Budget priority of the page requests ('low': background observation). */
  priority?: Priority;
  /** Called as each page request leaves (after waiting for budget): the page holds what was there then or later. */
  onPage?: (sentAt: number) => void;
}

type PathArgs<P extends string> = P extends `${string}{${string}}${infer Rest}`
  ? [string, ...PathArgs<Rest>]
  : [];
type Out<R> = R extends z.ZodType ? z.output<R> : undefined;

export type Bound<T> = T extends { kind: 'list'; path: infer P extends string; item: infer I }
  ? (...args: [...PathArgs<P>, ListOptions?]) => AsyncIterable<Out<I>>
  : T extends { kind: 'op'; path: infer P extends string; body: infer B; response: infer R }
    ? B extends z.ZodType
      ? (...args: [...PathArgs<P>, z.input<B>, CallOptions?]) => Promise<Out<R>>
      : (...args: [...PathArgs<P>, CallOptions?]) => Promise<Out<R>>
    : { [K in keyof T]: Bound<T[K]> };

export type EdgeClient = Bound<Operations> & {
  readonly transport: Transport;
  close(graceMs?: number): Promise<void>;
};

function fillPath(path: string, args: unknown[]): { path: string; id: string | undefined } {
  const names = pathParams(path);
  let out = path;
  names.forEach((n, i) => {
    const v = args[i];
    if (typeof v !== 'string' || v === '')
      throw new TypeError(`${path}: path parameter ${n} must be a non-empty string`);
    out = out.replace(`{${n}}`, encodeURIComponent(v));
  });
  return { path: out, id: names.length ? (args[names.length - 1] as string) : undefined };
}

function parseResponse(schema: z.ZodType, body: unknown, operation: string, id?: string): unknown {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  // not the API's answer (another service at the URL, a version mismatch): retried as an
  // unavailable API, never taken for a refusal of the request
  const issue = r.error.issues[0];
  throw new ApiError({
    status: 200,
    operation,
    resourceId: id,
    networkCode: 'BAD_RESPONSE',
    text: `answered a body that is not the API's (${issue ? `${issue.path.join('.') || 'body'}: ${issue.message}` : 'unexpected shape'}): is --api-url the API's base URL?`,
  });
}

function bindOp(t: Transport, name: string, def: OpDef) {
  const n = pathParams(def.path).length;
  return async (...args: unknown[]) => {
    const { path, id } = fillPath(def.path, args);
    const body = def.body ? args[n] : undefined;
    const opts = (args[def.body ? n + 1 : n] ?? {}) as CallOptions;
    const res = await t.request({
      operation: name,
      method: def.method,
      path,
      body,
      creates: def.creates,
      resourceId: id,
      signal: opts.signal,
    });
    return def.response ? parseResponse(def.response, res.body, name, id) : undefined;
  };
}

function bindList(t: Transport, name: string, def: ListDef) {
  return (...args: unknown[]) => {
    const { path } = fillPath(def.path, args);
    const opts = (args[pathParams(def.path).length] ?? {}) as ListOptions;
    const limit = Math.min(LIST_LIMIT_MAX, Math.max(1, opts.limit ?? LIST_LIMIT_MAX));
    return {
      async *[Symbol.asyncIterator]() {
        let next: string | null =
          `${path}?limit=${limit}` +
          (opts.filter === undefined ? '' : `&filter=${encodeURIComponent(opts.filter)}`);
        // a page that leads to one already read (a proxy dropping the query, a faulty server)
        // would repeat its items forever at the account's budget
        const seen = new Set<string>();
        while (next) {
          const at = t.url(next).href;
          if (seen.has(at)) throw new Error(`${name}: the API's next_page_uri repeats ${at}`);
          seen.add(at);
          const res = await t.request({
            operation: name,
            method: 'GET',
            path: next,
            signal: opts.signal,
            priority: opts.priority,
            onSend: opts.onPage && (() => opts.onPage?.(Date.now())),
          });
          const page = parseResponse(def.response, res.body, name) as Record<string, unknown> & {
            next_page_uri: string | null;
          };
          yield* page[def.key] as unknown[];
          next = page.next_page_uri;
        }
      },
    };
  };
}

function bindTree(t: Transport, tree: object, prefix: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(tree)) {
    const name = prefix ? `${prefix}.${k}` : k;
    const def = v as AnyOp;
    if (def && 'kind' in def) out[k] = def.kind === 'list' ? bindList(t, name, def) : bindOp(t, name, def);
    else out[k] = bindTree(t, v as object, name);
  }
  return out;
}

export function createClient(opts: TransportOptions | Transport): EdgeClient {
  const transport = opts instanceof Transport ? opts : new Transport(opts);
  return Object.assign(bindTree(transport, operations, ''), {
    transport,
    close: (graceMs?: number) => transport.close(graceMs),
  }) as unknown as EdgeClient;
}

/** Collects an async iterable (a list operation) into an array. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of items) out.push(x);
  return out;
}
