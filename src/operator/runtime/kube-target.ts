// Where the Kubernetes API server is and how to authenticate to it, from @kubernetes/client-node's
// KubeConfig, maintained by the Kubernetes project: in-cluster service account, --kubeconfig,
// $KUBECONFIG (several files merged), ~/.kube/config; contexts, client certificates, tokens and
// token files, exec credential plugins, the auth providers it supports, impersonation,
// proxy-url, tls-server-name, insecure-skip-tls-verify. What the project still does itself:
// the requests (kube.ts, on undici: merge patches, the status subresource, metadata-only lists
// and watches), so this module turns the KubeConfig into headers and an undici dispatcher, per
// request: a refreshed exec credential is used as soon as it is there, a rotated token or
// certificate file within a second (the files are read at most once a second, not per request).
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

export interface KubeTarget {
  server: string;
  /** The kubeconfig context, or "(in-cluster)". */
  context: string;
  /** What one request needs: its authentication headers and the dispatcher carrying the TLS trust and client certificate. */
  auth(): Promise<{ headers: Record<string, string>; dispatcher: Dispatcher }>;
}

/** A kubeconfig that cannot be used: names what is wrong. */
export class KubeConfigError extends Error {
  override name = 'KubeConfigError';
}

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The kubeconfig files (merged as kubectl does) into `kc`; returns the current context's name. */
function loadFiles(kc: KubeConfig, path: string | undefined): string {
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
  const name = kc.getCurrentContext();
  if (!name) throw new KubeConfigError(`kubeconfig ${existing.join(delimiter)} has no current-context`);
  if (!kc.getContextObject(name)) throw new KubeConfigError(`kubeconfig: context ${name} is not defined`);
  return name;
}

/** In-cluster, else the kubeconfig file given, else $KUBECONFIG (files merged), else ~/.kube/config. */
export function loadKubeConfig(path?: string): KubeTarget {
  const kc = new KubeConfig();
  let context: string;
  const saDir = process.env.EDGE_SERVICE_ACCOUNT_DIR ?? SERVICE_ACCOUNT_DIR;
  if (!path && !process.env.KUBECONFIG && process.env.KUBERNETES_SERVICE_HOST) {
    if (!existsSync(join(saDir, 'token')))
      throw new KubeConfigError(`in-cluster: no service account token at ${join(saDir, 'token')}`);
    inCluster(kc, saDir);
    context = '(in-cluster)';
  } else {
    context = loadFiles(kc, path);
  }
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
  // Reading and decoding the credential files was 7% of the CPU of each request in a bulk
  // apply; an exec plugin's credential keeps its own expiry, so it is asked each time.
  let last: { at: number; auth: ReturnType<typeof auth> } | undefined;
  return {
    server: cluster.server.replace(/\/$/, ''),
    context,
    auth: user?.exec
      ? auth
      : () => {
          const now = Date.now();
          if (last && now - last.at >= 0 && now - last.at < AUTH_REUSE_MS) return last.auth;
          const current = { at: now, auth: auth() };
          last = current;
          current.auth.catch(() => {
            if (last === current) last = undefined;
          });
          return current.auth;
        },
  };
}

/** How long the credentials read from files serve before they are read again. */
const AUTH_REUSE_MS = 1000;

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

/** The pod's service account: client-node's in-cluster shape, from a folder tests can point elsewhere. */
function inCluster(kc: KubeConfig, dir: string): void {
  const host = process.env.KUBERNETES_SERVICE_HOST!;
  const port = process.env.KUBERNETES_SERVICE_PORT ?? '443';
  if (dir === SERVICE_ACCOUNT_DIR) {
    kc.loadFromCluster();
    return;
  }
  kc.loadFromClusterAndUser(
    {
      name: 'inCluster',
      server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
      caFile: join(dir, 'ca.crt'),
      skipTLSVerify: false,
    },
    // the token file is re-read (the kubelet rotates it), as client-go does
    { name: 'inClusterUser', authProvider: { name: 'tokenFile', config: { tokenFile: join(dir, 'token') } } },
  );
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

const firstLine = (err: unknown) => String((err as Error)?.message ?? err).split('\n')[0];
