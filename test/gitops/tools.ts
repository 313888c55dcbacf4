// Flux and Argo CD as local processes against the gitops suite's control plane, the way their
// own repositories run them for development (Flux's `make run`, Argo CD's Procfile), every
// listener on loopback. Their output goes to files under .cache/gitops-logs (kept after the
// run) and the last lines come with any failure to start.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { Fatal, freePort, waitFor } from '../support/operator.ts';

export const LOG_DIR = join(REPO_ROOT, '.cache', 'gitops-logs');

export interface Proc {
  name: string;
  proc: ChildProcess;
  log: string;
  stop(): Promise<void>;
}

function start(name: string, cmd: string, args: string[], env: Record<string, string> = {}): Proc {
  mkdirSync(LOG_DIR, { recursive: true });
  const log = join(LOG_DIR, `${name}.log`);
  const out = createWriteStream(log);
  // argv0: Argo CD's one binary picks its component by the name it runs under
  const proc = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout!.pipe(out);
  proc.stderr!.pipe(out);
  return {
    name,
    proc,
    log,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
        proc.once('exit', () => {
          clearTimeout(t);
          resolve();
        });
        proc.kill('SIGTERM');
      }),
  };
}

const tail = (p: Proc) => {
  try {
    return readFileSync(p.log, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    return '';
  }
};

/** Waits for an HTTP endpoint to answer 200, failing at once when the process exits. */
async function healthy(p: Proc, url: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    `${p.name} ${url}`,
    async () => {
      if (p.proc.exitCode !== null) throw new Fatal(`${p.name} exited with ${p.proc.exitCode}:\n${tail(p)}`);
      return (await fetch(url, { signal: AbortSignal.timeout(2000) })).ok;
    },
    timeoutMs,
    300,
  );
}

/**
 * kube-controller-manager with the controllers a cluster deletes with: the garbage collector
 * (Argo CD prunes with foreground propagation, whose finalizer only it removes) and the
 * namespace controller. A real cluster has them; the bare control plane does not.
 */
export async function startControllerManager(o: {
  bin: string;
  kubeconfig: string;
  clusterDir: string;
}): Promise<Proc> {
  const port = await freePort();
  const p = start('kube-controller-manager', join(o.bin, 'kube-controller-manager'), [
    `--kubeconfig=${o.kubeconfig}`,
    `--authentication-kubeconfig=${o.kubeconfig}`,
    `--authorization-kubeconfig=${o.kubeconfig}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${port}`,
    '--leader-elect=false',
    `--root-ca-file=${join(o.clusterDir, 'ca.crt')}`,
    '--use-service-account-credentials=false',
    '--controllers=garbagecollector,namespace',
  ]);
  await waitFor(
    'kube-controller-manager /healthz',
    async () => {
      if (p.proc.exitCode !== null)
        throw new Fatal(`kube-controller-manager exited with ${p.proc.exitCode}:\n${tail(p)}`);
      const r = await new Promise<number>((resolve) => {
        const req = httpsGet(
          `https://127.0.0.1:${port}/healthz`,
          { rejectUnauthorized: false, timeout: 2000 },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', () => resolve(0));
      });
      return r === 200;
    },
    60_000,
    300,
  );
  return p;
}

export interface Tools {
  procs: Proc[];
  stop(): Promise<void>;
}

const stopAll = (procs: Proc[]) => async () => {
  for (const p of [...procs].reverse()) await p.stop();
};

/** source-controller and kustomize-controller, watching every namespace, no leader election. */
export async function startFlux(o: { bin: string; kubeconfig: string; dataDir: string }): Promise<Tools> {
  const [storage, scMetrics, scHealth, kcMetrics, kcHealth] = await Promise.all(
    Array.from({ length: 5 }, () => freePort()),
  );
  const common = { KUBECONFIG: o.kubeconfig, RUNTIME_NAMESPACE: 'flux-system' };
  mkdirSync(join(o.dataDir, 'artifacts'), { recursive: true });
  const procs: Proc[] = [];
  try {
    const sc = start(
      'source-controller',
      join(o.bin, 'source-controller'),
      [
        `--storage-path=${join(o.dataDir, 'artifacts')}`,
        `--storage-addr=127.0.0.1:${storage}`,
        `--storage-adv-addr=127.0.0.1:${storage}`,
        `--metrics-addr=127.0.0.1:${scMetrics}`,
        `--health-addr=127.0.0.1:${scHealth}`,
        '--enable-leader-election=false',
        '--log-level=debug',
      ],
      common,
    );
    procs.push(sc);
    const kc = start(
      'kustomize-controller',
      join(o.bin, 'kustomize-controller'),
      [
        `--metrics-addr=127.0.0.1:${kcMetrics}`,
        `--health-addr=127.0.0.1:${kcHealth}`,
        '--enable-leader-election=false',
        '--log-level=debug',
      ],
      // artifacts are fetched from the storage address the source-controller advertises
      { ...common, SOURCE_CONTROLLER_LOCALHOST: `127.0.0.1:${storage}` },
    );
    procs.push(kc);
    await healthy(sc, `http://127.0.0.1:${scHealth}/readyz`);
    await healthy(kc, `http://127.0.0.1:${kcHealth}/readyz`);
  } catch (e) {
    await stopAll(procs)();
    throw e;
  }
  return { procs, stop: stopAll(procs) };
}

/** Redis (Debian's), Argo CD's repo-server and application-controller, plaintext on loopback. */
export async function startArgoCD(o: {
  bin: string;
  kubeconfig: string;
  dataDir: string;
  namespace: string;
  /** --app-resync, seconds: how often Argo CD compares an app with Git and the cluster */
  resyncSeconds: number;
}): Promise<Tools & { controllerMetrics: string }> {
  const [redis, repo, repoMetrics, ctlMetrics] = await Promise.all(
    Array.from({ length: 4 }, () => freePort()),
  );
  const dirs = { tls: join(o.dataDir, 'tls'), ssh: join(o.dataDir, 'ssh'), gpg: join(o.dataDir, 'gpg') };
  for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
  const env = {
    KUBECONFIG: o.kubeconfig,
    // the kubeconfig's cluster is Argo CD's in-cluster destination (https://kubernetes.default.svc)
    ARGOCD_FAKE_IN_CLUSTER: 'true',
    ARGOCD_TLS_DATA_PATH: dirs.tls,
    ARGOCD_SSH_DATA_PATH: dirs.ssh,
    ARGOCD_GNUPGHOME: dirs.gpg,
    ARGOCD_GPG_ENABLED: 'false',
    HOME: o.dataDir,
  };
  const procs: Proc[] = [];
  try {
    const r = start('redis', 'redis-server', [
      '--port',
      String(redis),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      o.dataDir,
    ]);
    procs.push(r);
    const rs = start(
      'argocd-repo-server',
      join(o.bin, 'argocd-repo-server'),
      [
        '--address=127.0.0.1',
        `--port=${repo}`,
        '--metrics-address=127.0.0.1',
        `--metrics-port=${repoMetrics}`,
        `--redis=127.0.0.1:${redis}`,
        // what a Git webhook does in production (Argo CD learns of a push at once): without it
        // the branch's head is taken from a cache for 3 minutes
        '--revision-cache-expiration=5s',
        '--disable-tls',
        '--loglevel=debug',
        '--logformat=text',
      ],
      env,
    );
    procs.push(rs);
    await healthy(rs, `http://127.0.0.1:${repoMetrics}/metrics`);
    const ac = start(
      'argocd-application-controller',
      join(o.bin, 'argocd-application-controller'),
      [
        `--namespace=${o.namespace}`,
        `--redis=127.0.0.1:${redis}`,
        `--repo-server=127.0.0.1:${repo}`,
        '--repo-server-plaintext',
        `--metrics-port=${ctlMetrics}`,
        `--app-resync=${o.resyncSeconds}`,
        '--app-resync-jitter=0',
        // each resource's health (and message) in the Application's status, where the suite
        // reads it; by default it lives in Redis for argocd-server, which does not run here
        '--persist-resource-health',
        '--loglevel=debug',
        '--logformat=text',
      ],
      { ...env, HOSTNAME: 'argocd-application-controller-0' },
    );
    procs.push(ac);
    await healthy(ac, `http://127.0.0.1:${ctlMetrics}/healthz`);
    return { procs, stop: stopAll(procs), controllerMetrics: `http://127.0.0.1:${ctlMetrics}/metrics` };
  } catch (e) {
    await stopAll(procs)();
    throw e;
  }
}
