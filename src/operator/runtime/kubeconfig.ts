// Where the Kubernetes API server is and how to authenticate to it: in-cluster service
// account, or a kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) with client
// certificates, tokens, basic auth or an exec credential plugin. Written here rather than
// loaded from @kubernetes/client-node, whose import alone costs about 86 MiB of memory
// for the generated API models this operator never uses.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { Agent, type Dispatcher } from 'undici';
import { parse } from 'yaml';

export interface KubeTarget {
  server: string;
  /** The kubeconfig context, or "(in-cluster)". */
  context: string;
  /** Headers that authenticate one request (a token is re-read or refreshed as needed). */
  headers(): Promise<Record<string, string>>;
  /** Carries the TLS trust and client certificate. */
  dispatcher(): Promise<Dispatcher>;
}

/** A kubeconfig that cannot be used: names what is wrong. */
export class KubeConfigError extends Error {
  override name = 'KubeConfigError';
}

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

interface Named<T> {
  name: string;
  [k: string]: unknown;
  cluster?: T;
  user?: T;
  context?: T;
}
interface ClusterEntry {
  server?: string;
  'certificate-authority'?: string;
  'certificate-authority-data'?: string;
  'insecure-skip-tls-verify'?: boolean;
  'tls-server-name'?: string;
}
interface UserEntry {
  token?: string;
  tokenFile?: string;
  'client-certificate'?: string;
  'client-certificate-data'?: string;
  'client-key'?: string;
  'client-key-data'?: string;
  username?: string;
  password?: string;
  exec?: { command: string; args?: string[]; env?: { name: string; value: string }[] | null };
  'auth-provider'?: { name: string };
}
interface KubeConfigFile {
  clusters?: Named<ClusterEntry>[];
  users?: Named<UserEntry>[];
  contexts?: Named<{ cluster: string; user: string }>[];
  'current-context'?: string;
}

/** Reads a file a kubeconfig names, relative to the kubeconfig's own folder. */
const readRelative = (base: string, path: string) => readFileSync(isAbsolute(path) ? path : join(base, path));
const b64 = (s: string) => Buffer.from(s, 'base64');

/** In-cluster, else the kubeconfig file given, else $KUBECONFIG (files merged), else ~/.kube/config. */
export function loadKubeConfig(path?: string): KubeTarget {
  if (!path && !process.env.KUBECONFIG && process.env.KUBERNETES_SERVICE_HOST) return inCluster();
  const files = path
    ? [path]
    : process.env.KUBECONFIG
      ? process.env.KUBECONFIG.split(':').filter(Boolean)
      : [join(homedir(), '.kube', 'config')];
  const existing = files.filter((f) => existsSync(f));
  if (!existing.length) throw new KubeConfigError(`no kubeconfig at ${files.join(', ')}`);
  // merged as kubectl does: the first file to name an entry or the current context wins
  const merged: Required<Omit<KubeConfigFile, 'current-context'>> & { 'current-context'?: string } = {
    clusters: [],
    users: [],
    contexts: [],
  };
  const baseOf = new Map<object, string>();
  for (const f of existing) {
    let doc: KubeConfigFile;
    try {
      doc = (parse(readFileSync(f, 'utf8')) ?? {}) as KubeConfigFile;
    } catch (err) {
      throw new KubeConfigError(
        `kubeconfig ${f} is not valid YAML: ${(err as Error).message.split('\n')[0]}`,
      );
    }
    for (const k of ['clusters', 'users', 'contexts'] as const)
      for (const e of doc[k] ?? []) {
        if ((merged[k] as Named<unknown>[]).some((x) => x.name === e.name)) continue;
        (merged[k] as Named<unknown>[]).push(e as Named<unknown>);
        baseOf.set(e, dirname(f));
      }
    merged['current-context'] ??= doc['current-context'];
  }
  const contextName = merged['current-context'];
  if (!contextName) throw new KubeConfigError(`kubeconfig ${existing.join(':')} has no current-context`);
  const ctx = merged.contexts.find((c) => c.name === contextName);
  if (!ctx?.context) throw new KubeConfigError(`kubeconfig: context ${contextName} is not defined`);
  const cluster = merged.clusters.find((c) => c.name === ctx.context!.cluster);
  if (!cluster?.cluster?.server)
    throw new KubeConfigError(
      `kubeconfig: cluster ${ctx.context.cluster} (context ${contextName}) has no server`,
    );
  const user = merged.users.find((u) => u.name === ctx.context!.user);
  const c = cluster.cluster;
  const u = user?.user ?? {};
  const cbase = baseOf.get(cluster)!;
  const ubase = user ? baseOf.get(user)! : cbase;
  if (u['auth-provider'])
    throw new KubeConfigError(
      `kubeconfig user ${user?.name}: auth-provider ${u['auth-provider'].name} is not supported; use an exec credential plugin`,
    );
  const tls = {
    ca: c['certificate-authority-data']
      ? b64(c['certificate-authority-data'])
      : c['certificate-authority']
        ? readRelative(cbase, c['certificate-authority'])
        : undefined,
    rejectUnauthorized: !c['insecure-skip-tls-verify'],
    servername: c['tls-server-name'],
    cert: u['client-certificate-data']
      ? b64(u['client-certificate-data'])
      : u['client-certificate']
        ? readRelative(ubase, u['client-certificate'])
        : undefined,
    key: u['client-key-data']
      ? b64(u['client-key-data'])
      : u['client-key']
        ? readRelative(ubase, u['client-key'])
        : undefined,
  };
  const exec = u.exec ? execPlugin(u.exec, ubase) : undefined;
  let agent: { key: string; agent: Agent } | undefined;
  const agentFor = (cert?: Buffer | string, key?: Buffer | string) => {
    const id = `${cert ?? ''}|${key ?? ''}`;
    if (agent?.key !== id) {
      void agent?.agent.close();
      agent = {
        key: id,
        agent: new Agent({ connect: { ...tls, cert: cert ?? tls.cert, key: key ?? tls.key } }),
      };
    }
    return agent.agent;
  };
  return {
    server: c.server!.replace(/\/$/, ''),
    context: contextName,
    headers: async (): Promise<Record<string, string>> => {
      if (exec) {
        const cred = await exec();
        return cred.token ? { authorization: `Bearer ${cred.token}` } : {};
      }
      if (u.tokenFile)
        return { authorization: `Bearer ${readRelative(ubase, u.tokenFile).toString().trim()}` };
      if (u.token) return { authorization: `Bearer ${u.token}` };
      if (u.username !== undefined)
        return {
          authorization: `Basic ${Buffer.from(`${u.username}:${u.password ?? ''}`).toString('base64')}`,
        };
      return {};
    },
    dispatcher: async () => {
      if (!exec) return agentFor();
      const cred = await exec();
      return agentFor(cred.clientCertificateData, cred.clientKeyData);
    },
  };
}

/** The pod's service account: the token file is rotated by the kubelet, so it is re-read. */
function inCluster(dir = process.env.EDGE_SERVICE_ACCOUNT_DIR ?? SERVICE_ACCOUNT_DIR): KubeTarget {
  const host = process.env.KUBERNETES_SERVICE_HOST!;
  const port = process.env.KUBERNETES_SERVICE_PORT ?? '443';
  const tokenPath = join(dir, 'token');
  if (!existsSync(tokenPath))
    throw new KubeConfigError(`in-cluster: no service account token at ${tokenPath}`);
  const agent = new Agent({ connect: { ca: readFileSync(join(dir, 'ca.crt')) } });
  let token = { value: '', readAt: 0 };
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    context: '(in-cluster)',
    headers: async () => {
      if (Date.now() - token.readAt > 60_000)
        token = { value: readFileSync(tokenPath, 'utf8').trim(), readAt: Date.now() };
      return { authorization: `Bearer ${token.value}` };
    },
    dispatcher: async () => agent,
  };
}

interface ExecCredential {
  token?: string;
  clientCertificateData?: string;
  clientKeyData?: string;
  expirationTimestamp?: string;
}

/** client.authentication.k8s.io exec plugins (cloud CLIs): run when the last credential expires. */
function execPlugin(spec: NonNullable<UserEntry['exec']>, base: string): () => Promise<ExecCredential> {
  let cached: { cred: ExecCredential; until: number } | undefined;
  let running: Promise<ExecCredential> | undefined;
  const command =
    spec.command.includes('/') && !isAbsolute(spec.command) ? join(base, spec.command) : spec.command;
  const run = () =>
    new Promise<ExecCredential>((resolve, reject) => {
      execFile(
        command,
        spec.args ?? [],
        {
          env: { ...process.env, ...Object.fromEntries((spec.env ?? []).map((e) => [e.name, e.value])) },
          timeout: 60_000,
        },
        (err, stdout) => {
          if (err)
            return reject(
              new KubeConfigError(
                // its arguments and output may hold credentials: say only how it ended
                `exec credential plugin ${spec.command} failed (${(err as NodeJS.ErrnoException).code ?? err.signal ?? 'error'}); run it by hand to see why`,
              ),
            );
          try {
            const status = (JSON.parse(stdout) as { status?: ExecCredential }).status ?? {};
            resolve(status);
          } catch {
            reject(
              new KubeConfigError(`exec credential plugin ${spec.command} did not print an ExecCredential`),
            );
          }
        },
      );
    });
  return async () => {
    if (cached && Date.now() < cached.until) return cached.cred;
    running ??= run()
      .then((cred) => {
        const exp = cred.expirationTimestamp ? Date.parse(cred.expirationTimestamp) - 30_000 : Infinity;
        cached = { cred, until: exp };
        return cred;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
}
