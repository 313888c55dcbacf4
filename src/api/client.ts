// The typed client: one method per entry of the operations table, derived, never listed.
import { z } from 'zod';
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
import type { Priority } from './request-gate.ts';
import { listResponse } from './schemas/common.ts';
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
  /**
   * A listed resource that does not match the API's schema (a field the operator does not know
   * in that form): told, and left out, and the rest of the list stands. Without it the list
   * fails, naming the resource.
   */
  onMalformed?: (item: MalformedItem) => void;
}

/** A listed resource the schema refused: its id if it has one, the first field refused and why. */
export interface MalformedItem {
  id?: string;
  field: string;
  problem: string;
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

/** A resource of the API's own (an id and its URI), whatever else is wrong with it. */
const resourceId = (body: unknown): string | undefined => {
  const b = body as { id?: unknown; uri?: unknown } | null;
  return typeof b === 'object' && b !== null && typeof b.id === 'string' && typeof b.uri === 'string'
    ? b.id
    : undefined;
};

const firstIssue = (e: z.ZodError): { field: string; problem: string } => {
  const issue = e.issues[0];
  return issue
    ? { field: issue.path.join('.') || 'body', problem: issue.message }
    : { field: 'body', problem: 'unexpected shape' };
};

function parseResponse(schema: z.ZodType, body: unknown, operation: string, id?: string): unknown {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  // retried as an unavailable API, never taken for a refusal of the request; a resource of the
  // API's with one field the operator does not know is that, else it is not the API's answer
  // (another service at the URL, a version mismatch)
  const { field, problem } = firstIssue(r.error);
  const own = resourceId(body);
  throw new ApiError({
    status: 200,
    operation,
    resourceId: id,
    networkCode: 'BAD_RESPONSE',
    text: own
      ? `answered ${own} in a shape the operator does not know (${field}: ${problem})`
      : `answered a body that is not the API's (${field}: ${problem}): is --api-url the API's base URL?`,
  });
}

/** A list's pages with their resources unread: each is read on its own (one malformed resource spoils no other). */
const envelopes = new WeakMap<ListDef, z.ZodType>();
const envelopeOf = (def: ListDef): z.ZodType => {
  const e = envelopes.get(def) ?? listResponse(def.key, z.unknown());
  envelopes.set(def, e);
  return e;
};

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
          const page = parseResponse(envelopeOf(def), res.body, name) as Record<string, unknown> & {
            next_page_uri: string | null;
          };
          for (const raw of page[def.key] as unknown[]) {
            const r = def.item.safeParse(raw);
            if (r.success) {
              yield r.data;
              continue;
            }
            const bad: MalformedItem = { id: resourceId(raw), ...firstIssue(r.error) };
            if (!opts.onMalformed)
              throw new ApiError({
                status: 200,
                operation: name,
                resourceId: bad.id,
                networkCode: 'BAD_RESPONSE',
                text: `listed ${bad.id ?? 'a resource'} in a shape the operator does not know (${bad.field}: ${bad.problem})`,
              });
            opts.onMalformed(bad);
          }
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
