// A small Kubernetes REST client over undici: the pod's service account or a kubeconfig
// (load-kube-target.ts) says where and how to authenticate; we send the requests ourselves so that patch content types,
// subresources, watches and their failure modes are ours to control. undici's `request`,
// not its `fetch`: no WHATWG streams on the hot path (fetch cost the operator a fifth of
// its CPU in a bulk apply).
import { request } from 'undici';
import type { KubeTarget } from './kube-target.ts';

export { loadKubeConfig } from './load-kube-target.ts';

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
}
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [k: string]: unknown;
}
export interface KubeList {
  metadata: { resourceVersion: string; continue?: string };
  items: KubeObject[];
}
export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: KubeObject & { code?: number; message?: string; reason?: string };
}

/** Lists and watches of metadata only (PartialObjectMetadata): no Secret data crosses the wire. */
export const METADATA_ONLY = {
  list: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
  watch: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json',
};

export class KubeError extends Error {
  readonly status: number;
  readonly reason: string | undefined;
  constructor(status: number, message: string, reason?: string) {
    super(message);
    this.name = 'KubeError';
    this.status = status;
    this.reason = reason;
  }
}
export const isConflict = (e: unknown) => e instanceof KubeError && e.status === 409;
export const isKubeNotFound = (e: unknown) => e instanceof KubeError && e.status === 404;

export type PatchType = 'merge' | 'json' | 'strategic';
const PATCH_CONTENT: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
};

export interface ResourcePath {
  group: string; // '' for core
  version: string;
  plural: string;
}
export const resourceUrl = (r: ResourcePath, namespace?: string, name?: string, sub?: string) =>
  [
    r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`,
    namespace ? `namespaces/${encodeURIComponent(namespace)}` : '',
    r.plural,
    name ? encodeURIComponent(name) : '',
    sub ?? '',
  ]
    .filter(Boolean)
    .join('/');

/** How long a request (not a watch) may wait for the API server's headers, and then between body chunks. */
const REQUEST_TIMEOUT_MS = 30_000;

export class Kube {
  readonly target: KubeTarget;
  readonly server: string;
  /** Counts every request by verb and outcome; the manager exports it. */
  onRequest?: (verb: string, status: number) => void;

  constructor(target: KubeTarget) {
    this.target = target;
    this.server = target.server;
  }

  async request<T>(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    opts: {
      body?: unknown;
      contentType?: string;
      accept?: string;
      query?: Record<string, string | number | boolean | undefined>;
      signal?: AbortSignal;
    } = {},
  ): Promise<T> {
    let url = this.server + path;
    if (opts.query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(opts.query)) if (v !== undefined) q.set(k, String(v));
      const qs = q.toString();
      if (qs) url += `?${qs}`;
    }
    const auth = await this.target.auth();
    const res = await request(url, {
      method: method as 'GET',
      headers: {
        ...auth.headers,
        accept: opts.accept ?? 'application/json',
        ...(opts.body === undefined ? {} : { 'content-type': opts.contentType ?? 'application/json' }),
      },
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      dispatcher: auth.dispatcher,
      // undici's own timers, not an AbortSignal and its timer per request (the patches and
      // Events of a bulk apply are thousands of requests)
      signal: opts.signal,
      headersTimeout: REQUEST_TIMEOUT_MS,
      bodyTimeout: REQUEST_TIMEOUT_MS,
    });
    const text = await res.body.text();
    this.onRequest?.(method, res.statusCode);
    if (res.statusCode < 200 || res.statusCode > 299) {
      let msg = text;
      let reason: string | undefined;
      try {
        const s = JSON.parse(text) as { message?: string; reason?: string };
        msg = s.message ?? text;
        reason = s.reason;
      } catch {}
      throw new KubeError(res.statusCode, `${method} ${path}: ${res.statusCode} ${msg}`, reason);
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }

  get<T = KubeObject>(r: ResourcePath, namespace: string | undefined, name: string, signal?: AbortSignal) {
    return this.request<T>('GET', resourceUrl(r, namespace, name), { signal });
  }
  /**
   * One page of a list. The API server answers an empty metadata-only list with
   * `"items": null` (and a list may omit it): every caller gets an array.
   */
  async list(
    r: ResourcePath,
    namespace?: string,
    query?: Record<string, string | number | boolean | undefined>,
    accept?: string,
  ): Promise<KubeList> {
    const page = await this.request<Partial<KubeList> | undefined>('GET', resourceUrl(r, namespace), {
      query,
      accept,
    });
    return { metadata: page?.metadata ?? { resourceVersion: '' }, items: page?.items ?? [] };
  }
  create<T = KubeObject>(
    r: ResourcePath,
    namespace: string | undefined,
    body: unknown,
    signal?: AbortSignal,
  ) {
    return this.request<T>('POST', resourceUrl(r, namespace), { body, signal });
  }
  replace<T = KubeObject>(
    r: ResourcePath,
    namespace: string | undefined,
    name: string,
    body: unknown,
    signal?: AbortSignal,
  ) {
    return this.request<T>('PUT', resourceUrl(r, namespace, name), { body, signal });
  }
  patch<T = KubeObject>(
    r: ResourcePath,
    namespace: string | undefined,
    name: string,
    body: unknown,
    type: PatchType = 'merge',
    sub?: string,
  ) {
    return this.request<T>('PATCH', resourceUrl(r, namespace, name, sub), {
      body,
      contentType: PATCH_CONTENT[type],
    });
  }
  delete(r: ResourcePath, namespace: string | undefined, name: string) {
    return this.request<unknown>('DELETE', resourceUrl(r, namespace, name));
  }

  private watchUrl(
    r: ResourcePath,
    namespace: string | undefined,
    resourceVersion: string,
    opts: { timeoutSeconds: number; labelSelector?: string; fieldSelector?: string },
  ): URL {
    const url = new URL(this.server + resourceUrl(r, namespace));
    url.searchParams.set('watch', 'true');
    if (opts.labelSelector) url.searchParams.set('labelSelector', opts.labelSelector);
    if (opts.fieldSelector) url.searchParams.set('fieldSelector', opts.fieldSelector);
    url.searchParams.set('allowWatchBookmarks', 'true');
    url.searchParams.set('resourceVersion', resourceVersion);
    url.searchParams.set('timeoutSeconds', String(opts.timeoutSeconds));
    return url;
  }

  /** The watch's response body, once the server accepted it (HTTP 200). */
  private async openWatch(url: URL, signal: AbortSignal, accept: string | undefined) {
    const auth = await this.target.auth();
    const res = await request(url, {
      headers: { ...auth.headers, ...(accept ? { accept } : {}) },
      dispatcher: auth.dispatcher,
      signal,
      // a watch is quiet for as long as nothing changes: the idle watchdog decides
      bodyTimeout: 0,
    });
    this.onRequest?.('WATCH', res.statusCode);
    if (res.statusCode !== 200) {
      throw new KubeError(
        res.statusCode,
        `watch ${url.pathname}: ${res.statusCode} ${await res.body.text()}`,
      );
    }
    return res.body;
  }

  /**
   * One watch request. Resolves when the stream ends (server timeout, error, abort);
   * `onEvent` runs synchronously per event. Inactivity beyond `idleMs` aborts it: with
   * bookmarks on, a healthy watch is never silent that long.
   */
  async watch(
    r: ResourcePath,
    namespace: string | undefined,
    resourceVersion: string,
    onEvent: (e: WatchEvent) => void,
    opts: {
      signal: AbortSignal;
      idleMs: number;
      timeoutSeconds: number;
      labelSelector?: string;
      /** e.g. metadata.name=NAME: one object's events only */
      fieldSelector?: string;
      accept?: string;
      /** The server accepted the watch (HTTP 200). */
      onOpen?: () => void;
    },
  ): Promise<void> {
    const url = this.watchUrl(r, namespace, resourceVersion, opts);
    const local = new AbortController();
    const abort = () => local.abort(opts.signal.reason);
    opts.signal.addEventListener('abort', abort, { once: true });
    // one timer re-armed from the last event's time, not one per event (a bulk apply brings
    // tens of thousands of events)
    let lastEvent = performance.now();
    let idle: NodeJS.Timeout | undefined;
    const watchdog = () => {
      const quiet = performance.now() - lastEvent;
      if (quiet >= opts.idleMs) local.abort(new Error(`watch idle for ${opts.idleMs}ms`));
      else idle = setTimeout(watchdog, opts.idleMs - quiet);
    };
    try {
      idle = setTimeout(watchdog, opts.idleMs);
      const body = await this.openWatch(url, local.signal, opts.accept);
      opts.onOpen?.();
      // Aborting below errors the stream after the loop is gone: without a listener that
      // 'error' would be unhandled and end the process.
      body.on('error', () => {});
      // one event per line; a chunk holds many (one turn of the loop each chunk, not each line)
      let rest = '';
      body.setEncoding('utf8');
      for await (const chunk of body as AsyncIterable<string>) {
        lastEvent = performance.now();
        const lines = (rest + chunk).split('\n');
        rest = lines.pop()!;
        for (const line of lines) if (line) onEvent(JSON.parse(line) as WatchEvent);
      }
      if (rest.trim()) onEvent(JSON.parse(rest) as WatchEvent);
    } finally {
      clearTimeout(idle);
      opts.signal.removeEventListener('abort', abort);
      local.abort();
    }
  }
}

/** Connection failures, 5xx and 429: worth another try; anything else is an answer. */
export const isTransient = (e: unknown) =>
  e instanceof KubeError
    ? e.status >= 500 || e.status === 429
    : (e as Error)?.name === 'TimeoutError' ||
      NETWORK_CODES.has((e as { code?: string })?.code ?? '') ||
      NETWORK_CODES.has((e as { cause?: { code?: string } })?.cause?.code ?? '');
/** The socket's and undici's codes for a server that is not (yet) there or went away. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * Retries a start-up call while the API server is unreachable or overloaded (a restart, a
 * rollout of the control plane), with capped backoff, until `until` if given; other errors are
 * thrown at once. With `refusedForMs`, a refusal of the credentials (401, 403) is retried too,
 * for that long from the first try: a kube-apiserver that has just started, or RBAC applied
 * together with the pod, refuses a service account until its caches hold the account's
 * bindings. A refusal that lasts is thrown (missing RBAC: the error names what was refused).
 */
export async function whileTransient<T>(
  what: string,
  fn: () => Promise<T>,
  onRetry: (what: string, err: Error) => void,
  o: { maxBackoffMs?: number; refusedForMs?: number; until?: number } = {},
): Promise<T> {
  const maxBackoffMs = o.maxBackoffMs ?? 10_000;
  const refusedUntil = Date.now() + (o.refusedForMs ?? 0);
  let backoff = 250;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      const refused = err instanceof KubeError && (err.status === 401 || err.status === 403);
      if (!isTransient(err) && !(refused && Date.now() + backoff < refusedUntil)) throw err;
      // a caller with a deadline (a command at the terminal) gives up with the last error
      if (o.until !== undefined && Date.now() + backoff > o.until)
        throw new Error(`${what}: ${(err as Error).message}; given up when the time allowed ran out`, {
          cause: err,
        });
      onRetry(what, err as Error);
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(maxBackoffMs, backoff * 2);
    }
  }
}
