// A kubeconfig's target, through @kubernetes/client-node's KubeConfig, maintained by the
// Kubernetes project: --kubeconfig, $KUBECONFIG (several files merged), ~/.kube/config;
// the current context or one named (edgectl's --context), client certificates, tokens and token files, exec credential plugins, the auth
// providers it supports, impersonation, proxy-url, tls-server-name, insecure-skip-tls-verify.
// Turned into headers and an undici dispatcher per request: a refreshed exec credential is used
// as soon as it is there, a rotated token or certificate file within a second (the files are
// read at most once a second, not per request). Loaded only when a kubeconfig is used
// (load-kube-target.ts): KubeConfig brings its auth providers, proxy agents and two YAML parsers,
// none of which a pod on its service account runs.
// KubeConfig comes from its own module: the package's index also loads the generated API
// clients, which the operator never uses (megabytes of memory).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { Agent, type Dispatcher, ProxyAgent } from 'undici';
import { parse, stringify } from 'yaml';
import {
  firstLine,
  KubeConfigError,
  type KubeTarget,
  reusedBriefly,
  UnknownContextError,
} from './kube-target.ts';

/**
 * The kubeconfig files (merged as kubectl does) into `kc`, with `context` (when named) made the
 * current one; returns the current context's name.
 */
function loadFiles(kc: KubeConfig, path: string | undefined, context: string | undefined): string {
  const files = path
    ? [path]
    : process.env.KUBECONFIG
      ? process.env.KUBECONFIG.split(delimiter).filter(Boolean)
      : [join(homedir(), '.kube', 'config')];
  const existing = files.filter((f) => existsSync(f));
  if (!existing.length) throw new KubeConfigError(`no kubeconfig at ${files.join(', ')}`);
  try {
    // merged as kubectl does: the first file to name an entry or the current context wins
    loadFile(kc, existing[0]!);
    for (const f of existing.slice(1)) {
      const more = new KubeConfig();
      loadFile(more, f);
      for (const c of more.getClusters()) if (!kc.getCluster(c.name)) kc.addCluster(c);
      for (const u of more.getUsers()) if (!kc.getUser(u.name)) kc.addUser(u);
      for (const c of more.getContexts()) if (!kc.getContextObject(c.name)) kc.addContext(c);
      if (!kc.getCurrentContext() && more.getCurrentContext()) kc.setCurrentContext(more.getCurrentContext());
    }
  } catch (err) {
    throw new KubeConfigError(`kubeconfig ${existing.join(delimiter)}: ${firstLine(err)}`);
  }
  if (context !== undefined) {
    if (!kc.getContextObject(context)) {
      const names = kc.getContexts().map((c) => c.name);
      throw new UnknownContextError(
        `kubeconfig ${existing.join(delimiter)} has no context ${JSON.stringify(context)} (${
          names.length
            ? `its contexts: ${names.slice(0, 10).join(', ')}${names.length > 10 ? ', ...' : ''}`
            : 'it has none'
        })`,
      );
    }
    kc.setCurrentContext(context);
  }
  const name = kc.getCurrentContext();
  if (!name) throw new KubeConfigError(`kubeconfig ${existing.join(delimiter)} has no current-context`);
  if (!kc.getContextObject(name)) throw new KubeConfigError(`kubeconfig: context ${name} is not defined`);
  return name;
}

/**
 * The kubeconfig file given, else $KUBECONFIG (files merged), else ~/.kube/config; its current
 * context, or the one named.
 */
export function kubeconfigTarget(path?: string, contextName?: string): KubeTarget {
  const kc = new KubeConfig();
  const context = loadFiles(kc, path, contextName);
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server)
    throw new KubeConfigError(`kubeconfig: the cluster of context ${context} has no server`);
  const user = kc.getCurrentUser();
  const dispatchers: Dispatchers = { byIdentity: new Map() };
  const auth = async () => {
    const opts: RequestOptions = { headers: {} };
    try {
      await kc.applyToHTTPSOptions(opts);
    } catch (err) {
      // an exec plugin's output and arguments may hold credentials: say only which failed
      throw new KubeConfigError(
        user?.exec
          ? `kubeconfig user ${user.name}: exec credential plugin ${user.exec.command} failed; run it by hand to see why`
          : `kubeconfig user ${user?.name}: no credentials: ${firstLine(err)}`,
      );
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.headers ?? {}))
      if (v !== undefined) headers[k.toLowerCase()] = String(v).trim();
    if (opts.auth) headers.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    return { headers, dispatcher: dispatcherFor(kc, cluster, opts, dispatchers) };
  };
  return {
    server: cluster.server.replace(/\/$/, ''),
    context,
    // an exec plugin's credential keeps its own expiry, so it is asked each time
    auth: user?.exec ? auth : reusedBriefly(auth),
  };
}

/**
 * One kubeconfig file. client-node reads a user's `token-file` while loading, relative to the
 * working directory; kubectl takes it relative to the kubeconfig, as every other path in it.
 */
function loadFile(kc: KubeConfig, file: string): void {
  const dir = dirname(file);
  const doc = (parse(readFileSync(file, 'utf8')) ?? {}) as { users?: { user?: Record<string, unknown> }[] };
  for (const u of doc.users ?? [])
    if (typeof u?.user?.['token-file'] === 'string' && !isAbsolute(u.user['token-file']))
      u.user['token-file'] = join(dir, u.user['token-file']);
  kc.loadFromString(stringify(doc));
  kc.makePathsAbsolute(dir);
}

interface Dispatchers {
  byIdentity: Map<string, Dispatcher>;
  /**
   * The last request's TLS inputs and their dispatcher: nearly every request brings the same,
   * and comparing them costs a fraction of hashing them (a twentieth of the operator's CPU in
   * a bulk apply went to hashing the trust per request).
   */
  last?: { inputs: unknown[]; d: Dispatcher };
}

const same = (a: unknown, b: unknown): boolean =>
  a === b ||
  (Buffer.isBuffer(a) && Buffer.isBuffer(b) && a.equals(b)) ||
  (Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i])));

/**
 * One undici dispatcher per TLS identity (trust, client certificate, server name, proxy): an
 * exec plugin that hands out a new client certificate gets a new connection pool.
 */
function dispatcherFor(
  kc: KubeConfig,
  cluster: NonNullable<ReturnType<KubeConfig['getCurrentCluster']>>,
  opts: RequestOptions,
  cache: Dispatchers,
): Dispatcher {
  const inputs = [opts.ca, opts.cert, opts.key, opts.rejectUnauthorized, opts.servername];
  const last = cache.last;
  if (last && inputs.every((v, i) => same(v, last.inputs[i]))) return last.d;
  const d = identityDispatcher(kc, cluster, opts, cache.byIdentity);
  cache.last = { inputs, d };
  return d;
}

function identityDispatcher(
  kc: KubeConfig,
  cluster: NonNullable<ReturnType<KubeConfig['getCurrentCluster']>>,
  opts: RequestOptions,
  cache: Map<string, Dispatcher>,
): Dispatcher {
  const o = kc.createDispatcherOptions(cluster, {
    ca: opts.ca,
    cert: opts.cert,
    key: opts.key,
    rejectUnauthorized: opts.rejectUnauthorized,
    servername: opts.servername,
  });
  const tls = o.type === 'agent' ? o.connect : o.type === 'none' ? {} : o.requestTls;
  const h = createHash('sha256').update(
    `${o.type}|${'uri' in o ? o.uri : ''}|${tls.servername ?? ''}|${tls.rejectUnauthorized}`,
  );
  for (const part of [tls.ca, tls.cert, tls.key])
    h.update(`|${part === undefined ? '' : part.length}|`).update(part ? String(part) : '');
  const key = h.digest('hex');
  let d = cache.get(key);
  if (d) return d;
  if (o.type === 'socks')
    throw new KubeConfigError(
      `kubeconfig: proxy-url ${cluster.proxyUrl}: SOCKS proxies are not supported, use an HTTP(S) proxy`,
    );
  for (const old of cache.values()) void old.close();
  cache.clear();
  d =
    o.type === 'proxy'
      ? new ProxyAgent({ uri: o.uri, requestTls: o.requestTls })
      : new Agent(o.type === 'agent' ? { connect: o.connect } : {});
  cache.set(key, d);
  return d;
}
