// Starts the operator from a configuration: the API client (or the embedded emulator),
// the Kubernetes connection (or the local control plane), and the manager.
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { createClient } from '../api/client.ts';
import { VERSION } from '../version.ts';
import { ConfigError, type OperatorConfig } from './config.ts';
import { BINDINGS } from './kinds/index.ts';
import { AccountMetrics } from './runtime/accounts/account-metrics.ts';
import { AccountRegistry } from './runtime/accounts/registry.ts';
import { INSTALLATION } from './runtime/accounts/resolve.ts';
import { DIGEST_KEY_SECRET, loadDigestKey } from './runtime/kube/digest-key.ts';
import { Kube, KubeError, type KubeObject, loadKubeConfig, whileTransient } from './runtime/kube/kube.ts';
import type { KubeTarget } from './runtime/kube/kube-target.ts';
import { createLogger } from './runtime/logging.ts';
import type { OnlineTunnel } from './runtime/manager/live-tunnels.ts';
import { Manager } from './runtime/manager/manager.ts';
import { ProbeServer } from './runtime/manager/probes.ts';
import { createMetrics, type Metrics } from './runtime/metrics.ts';
import { Budget } from './runtime/scheduler/budget.ts';
import { kindObserver } from './runtime/state/observer.ts';

/** How long a refusal of the operator's credentials at start is taken for RBAC not yet in place. */
const REFUSED_AT_START_MS = 30_000;

function kubeConfigured(cfg: OperatorConfig): boolean {
  return !!(
    cfg.kubeconfig ||
    process.env.KUBERNETES_SERVICE_HOST ||
    existsSync(join(process.env.HOME ?? '', '.kube', 'config'))
  );
}

/** Where the operator would connect, for the start log and for refusals. */
function describeCluster(kc: KubeTarget): { server: string; context: string } {
  return { server: kc.server, context: kc.context };
}

export async function runOperator(
  cfg: OperatorConfig,
): Promise<{ manager: Manager; stop: () => Promise<void> }> {
  const log = createLogger(cfg.logLevel, cfg.logFormat);
  const metrics = createMetrics();
  const closers: (() => Promise<void>)[] = [];
  const inCluster = !!process.env.KUBERNETES_SERVICE_HOST;

  // Ports first: a busy port must fail before anything in a cluster or an account is touched.
  const probes = new ProbeServer(metrics);
  await probes.listen('--listen', cfg.listen, true);
  if (cfg.probeListen && cfg.probeListen !== cfg.listen)
    await probes.listen('--probe-listen', cfg.probeListen, false);
  closers.push(() => probes.close());
  try {
    return await startOperator(cfg, log, metrics, probes, closers, inCluster);
  } catch (err) {
    for (const c of closers.reverse()) await c().catch(() => {});
    throw err;
  }
}

async function startOperator(
  cfg: OperatorConfig,
  log: Logger,
  metrics: Metrics,
  probes: ProbeServer,
  closers: (() => Promise<void>)[],
  inCluster: boolean,
): Promise<{ manager: Manager; stop: () => Promise<void> }> {
  // Which API. The embedded emulator runs only with the local control plane or when asked
  // for by name; a cluster is never paired with a throw-away API by default.
  let { apiUrl, apiKey } = cfg;
  const embedded = !apiUrl;
  const refuseEmbedded = embedded && !cfg.local && !cfg.emulator;
  if (refuseEmbedded && inCluster)
    throw new ConfigError(
      'no Edge API URL: set EDGE_API_URL (chart: api.url) and the API key Secret; the embedded emulator runs only when asked for (EDGE_EMULATOR=true, chart: api.emulator=true)',
    );

  // Which cluster.
  let kc: KubeTarget | undefined;
  if (!cfg.local) {
    if (!kubeConfigured(cfg))
      throw new ConfigError(
        'no Kubernetes cluster configured: set KUBECONFIG or --kubeconfig, or use --local (npm start) for a throw-away local control plane',
      );
    kc = await loadKubeConfig(cfg.kubeconfig, cfg.context);
  }
  if (refuseEmbedded) {
    const where = describeCluster(kc!);
    throw new ConfigError(
      `no Edge API URL for cluster ${where.server} (context ${where.context}): set EDGE_API_URL or --api-url and EDGE_API_KEY; for a demo use --local (a local control plane) or --emulator`,
    );
  }
  if (embedded) {
    const { startEmulator } = await import('../emulator/server.ts');
    const emu = await startEmulator({ host: '127.0.0.1', port: 0 });
    closers.push(() => emu.close());
    apiUrl = emu.url;
    apiKey = emu.apiKey;
    log.warn(
      { apiUrl },
      '*** using the EMBEDDED EMULATOR (in memory): nothing reaches a real account, everything is lost on exit ***',
    );
  }
  if (!apiKey && cfg.defaultAccount)
    throw new ConfigError(
      "no API key: set EDGE_API_KEY, --api-key or --api-key-file (or --default-account=false: objects then use their namespace's EdgeAccount or a ClusterEdgeAccount)",
    );

  // the local control plane's code (and its PKI library) is loaded only when it is used
  const local = cfg.local ? await import('../localcluster/cluster.ts') : undefined;
  if (local) {
    const { clusterUp, findBinaries, REPO_ROOT } = local;
    if (cfg.kubeconfig) log.info({ ignored: cfg.kubeconfig }, '--local: not using the configured kubeconfig');
    if (!findBinaries() && !existsSync(join(REPO_ROOT, 'test/controlplane/build.sh'))) {
      throw new ConfigError(
        '--local needs the control plane build script (a source checkout) or prebuilt binaries',
      );
    }
    const state = await clusterUp({ log: (s) => log.info(s) });
    kc = await loadKubeConfig(state.kubeconfig);
    log.warn({ kubeconfig: state.kubeconfig }, '*** --local: using the LOCAL CONTROL PLANE ***');
  }

  const kube = new Kube(kc!);
  kube.onRequest = (verb, status) => metrics.kubeRequests.inc({ method: verb, code: String(status) });
  if (cfg.local) {
    // loaded here only: a deployed operator never renders CRDs or applies manifests
    const [{ apply, readManifests }, { allCrds }] = await Promise.all([
      import('./apply.ts'),
      import('./kinds/generate-crds.ts'),
    ]);
    // the CRDs of this build, rendered in memory: the same bytes `npm run crds` writes
    await apply(kube, allCrds() as KubeObject[]);
    const examples = cfg.examples ?? join(local!.REPO_ROOT, 'deploy', 'examples');
    if (existsSync(examples)) {
      await apply(kube, readManifests(examples));
      log.info({ examples }, 'applied example manifests');
    }
  }
  const leaderElect = cfg.leaderElect ?? !cfg.local;
  if (!leaderElect && !cfg.local)
    log.warn(
      'leader election is off: run exactly one replica per instance, or two will fight over every object',
    );

  const retryLog = (what: string, err: Error) =>
    log.warn(
      { err: err.message },
      err instanceof KubeError
        ? `Kubernetes API answered ${err.status} while reading the ${what}; retrying`
        : `Kubernetes API not reachable while reading the ${what}; retrying`,
    );
  // RBAC applied with the pod, or a kube-apiserver just restarted, may refuse the service account for a moment
  const startup = { refusedForMs: REFUSED_AT_START_MS };
  const clusterId =
    cfg.clusterId ??
    (
      await whileTransient(
        'cluster id',
        () => kube.get({ group: '', version: 'v1', plural: 'namespaces' }, undefined, 'kube-system'),
        retryLog,
        startup,
      )
    ).metadata.uid!;

  let digestKey: string;
  try {
    digestKey = await whileTransient(
      'digest key',
      () => loadDigestKey(kube, cfg.leaderElectionNamespace),
      retryLog,
      startup,
    );
  } catch (err) {
    throw new Error(
      `cannot read or create the digest key Secret ${cfg.leaderElectionNamespace}/${DIGEST_KEY_SECRET}: ${(err as Error).message}`,
    );
  }

  const timeouts = {
    connectMs: Math.min(cfg.apiTimeoutMs, 10_000),
    headersMs: cfg.apiTimeoutMs,
    bodyMs: cfg.apiTimeoutMs,
  };
  // one line per distinct failure, however many requests and objects meet it
  const onOutage = (account: string, url: string) => (o: { reason: string; since: number } | undefined) =>
    o
      ? log.warn(
          { account, apiUrl: url, reason: o.reason, since: new Date(o.since).toISOString() },
          'Edge API unavailable: objects report APIUnavailable; one request at a time checks whether it is back',
        )
      : log.info({ account, apiUrl: url }, 'Edge API answers again');
  // Accounts: the installation's own (the flags) and one per EdgeAccount/ClusterEdgeAccount,
  // each with its own client and budget, and its own series of the API metrics.
  const accountMetrics = new AccountMetrics(metrics, (id) => !!registry.get(id));
  const registry = new AccountRegistry({
    client: (a) => {
      a.budget.onServed = accountMetrics.served(a.account);
      return createClient({
        baseUrl: a.url,
        apiKey: a.key,
        gate: a.budget,
        timeouts,
        onCall: (e) => {
          accountMetrics.call(a.account, e);
          a.onCall(e);
        },
        onRetry: (e) => accountMetrics.retried(a.account, e.reason),
        onOutage: onOutage(a.account, a.url),
      });
    },
    added: (account) => accountMetrics.added(account),
    removed: (account) => {
      void accountMetrics.forget(account);
      for (const b of BINDINGS) metrics.observedResources.remove({ kind: b.kind, account });
    },
    observer: (account, kind, client) => {
      const b = BINDINGS.find((x) => x.kind === kind)!;
      return kindObserver(b, {
        list: (onPage, onMalformed, first) =>
          b.api.list(client(), {}, { priority: first ? 'high' : 'low', onPage, onMalformed }),
        listed: () => registry.onRoom?.(account),
        log: log.child({ account }),
        metrics,
        account,
        bindings: BINDINGS,
        observer: (k) => registry.observer(account, k),
        existing: (k) => registry.get(account)?.observers.get(k),
      });
    },
  });
  // the closers run after the manager's drain deadline: what is still in flight is aborted
  closers.push(() => registry.closeAll(0));
  const budget = new Budget({ perMinute: cfg.apiRatePerMinute });
  const api = cfg.defaultAccount
    ? createClient({
        baseUrl: apiUrl!,
        apiKey: apiKey!,
        gate: budget,
        timeouts,
        onCall: (e) => {
          accountMetrics.call(INSTALLATION, e);
          registry.noteCall(INSTALLATION, e.status);
        },
        onRetry: (e) => accountMetrics.retried(INSTALLATION, e.reason),
        onOutage: onOutage(INSTALLATION, apiUrl!),
      })
    : undefined;
  if (api) {
    registry.adopt(INSTALLATION, apiUrl!, api, budget);
    budget.onServed = accountMetrics.served(INSTALLATION);
    closers.push(() => api.close(0));
  }

  const manager = new Manager({
    kube,
    api,
    accounts: {
      registry,
      installation: {
        enabled: cfg.defaultAccount,
        url: apiUrl,
        perMinute: cfg.apiRatePerMinute,
        namespace: cfg.leaderElectionNamespace,
        adoptFrom: cfg.adoptFrom,
      },
      allowedUrls: cfg.accountApiUrls,
      limits: {
        maxPerNamespace: cfg.maxAccountsPerNamespace,
        maxRatePerMinute: cfg.maxAccountRatePerMinute ?? cfg.apiRatePerMinute,
      },
    },
    bindings: BINDINGS,
    log,
    metrics,
    clusterId,
    digestKey,
    identity: `${hostname()}-${process.pid}`,
    namespaces: cfg.namespaces,
    sharedNamespaces: cfg.sharedNamespaces,
    accessBinding: cfg.accessBinding,
    concurrency: cfg.concurrency,
    resyncMs: cfg.resyncMs,
    drainMs: cfg.drainMs,
    instance: cfg.instance,
    probes,
    // every informer (each kind's, the Secrets'): the watchdog and /healthz's threshold
    informer: { idleMs: cfg.watchIdleMs },
    leaderElection: {
      enabled: leaderElect,
      namespace: cfg.leaderElectionNamespace,
      name: cfg.leaderElectionId,
    },
  });
  // the budget gauges of every account there is now, beside the manager's own
  const managerScrape = probes.beforeScrape;
  probes.beforeScrape = () => {
    managerScrape();
    accountMetrics.scrape(registry.all());
  };
  log.info(
    {
      version: VERSION,
      cluster: describeCluster(kc!),
      apiUrl,
      embeddedEmulator: embedded,
      instance: cfg.instance ?? '(default)',
      namespaces: cfg.namespaces.length ? cfg.namespaces : 'all',
      kinds: BINDINGS.map((b) => b.kind),
      clusterId,
      leaderElect,
    },
    'starting edge-operator',
  );
  // Gauges of online sessions and tunnels, so dashboards can alert on agents going away, and
  // each backend's, route's and edge's online tunnels in its status: two paged lists per
  // interval, whatever the number of objects (at 60 s, 2 of 120 requests a minute).
  // Only the leader polls: standbys would spend the account's request budget for nothing.
  const poll = async () => {
    if (!manager.isLeader) return;
    let sessions = 0;
    let online = 0;
    let failed = false;
    const byAccount = new Map<string, OnlineTunnel[]>();
    // one account's failure or slowness does not hold the others' back
    await Promise.all(
      registry
        .all()
        .filter((e) => e.usable)
        .map(async (e) => {
          try {
            let n = 0;
            // background observation: behind every change a user asked for
            for await (const _ of e.client.tunnelSessions.list({ priority: 'low' })) n++;
            const tunnels: OnlineTunnel[] = [];
            for await (const t of e.client.tunnels.list({ priority: 'low' })) tunnels.push(t);
            sessions += n;
            online += tunnels.length;
            byAccount.set(e.id, tunnels);
          } catch (err) {
            failed = true;
            log.warn({ account: e.id, err: (err as Error).message }, 'could not poll sessions and tunnels');
          }
        }),
    );
    // an account that could not be polled counts as unknown, not as none online: the gauges
    // keep the last full count rather than drop (an API outage would read as every agent gone)
    if (!failed) {
      metrics.sessionsOnline.set(sessions);
      metrics.tunnelsOnline.set(online);
    }
    // the same lists say, for every backend, route and edge, whether a tunnel serves it
    await manager
      .updateTunnels(byAccount)
      .catch((err: Error) => log.warn({ err: err.message }, 'could not update online tunnels'));
  };
  if (cfg.agentMetricsMs > 0) {
    const timer = setInterval(() => void poll(), cfg.agentMetricsMs);
    timer.unref();
    closers.push(async () => clearInterval(timer));
    setTimeout(() => void poll(), 2000).unref();
  }
  void manager.start().catch((err) => {
    log.fatal({ err: (err as Error).message }, 'manager failed');
    process.exit(1);
  });
  return {
    manager,
    stop: async () => {
      await manager.stop();
      for (const c of closers.reverse()) await c();
      // kept on purpose: the next `npm start` finds the objects and starts in seconds
      if (cfg.local)
        log.info('the local control plane keeps running for the next start; `npm run cluster:down` stops it');
    },
  };
}
