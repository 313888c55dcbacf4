// Starts the operator from a configuration: the API client (or the embedded emulator),
// the Kubernetes connection (or the local control plane), and the manager.
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { createClient } from '../api/client.ts';
import { startEmulator } from '../emulator/server.ts';
import { clusterUp, findBinaries, REPO_ROOT } from '../localcluster/cluster.ts';
import { apply, readManifests } from './apply.ts';
import type { OperatorConfig } from './config.ts';
import { CRD_DIR } from './kinds/generate-crds.ts';
import { BINDINGS } from './kinds/index.ts';
import { Kube, loadKubeConfig } from './runtime/kube.ts';
import { createLogger } from './runtime/logging.ts';
import { Manager } from './runtime/manager.ts';
import { createMetrics } from './runtime/metrics.ts';

function kubeConfigured(cfg: OperatorConfig): boolean {
  return !!(
    cfg.kubeconfig ||
    process.env.KUBERNETES_SERVICE_HOST ||
    existsSync(join(process.env.HOME ?? '', '.kube', 'config'))
  );
}

export async function runOperator(
  cfg: OperatorConfig,
): Promise<{ manager: Manager; stop: () => Promise<void> }> {
  const log = createLogger(cfg.logLevel);
  const metrics = createMetrics();
  const closers: (() => Promise<void>)[] = [];

  let { apiUrl, apiKey } = cfg;
  if (!apiUrl) {
    const emu = await startEmulator({ host: '127.0.0.1', port: 0 });
    closers.push(() => emu.close());
    apiUrl = emu.url;
    apiKey = emu.apiKey;
    log.warn(
      { apiUrl },
      '*** no --api-url / EDGE_API_URL: using the EMBEDDED EMULATOR; nothing reaches a real account ***',
    );
  }
  if (!apiKey) throw new Error('no API key: set EDGE_API_KEY, --api-key or --api-key-file');

  let localCluster = false;
  if (!kubeConfigured(cfg)) {
    if (!cfg.localCluster)
      throw new Error('no Kubernetes cluster configured (set KUBECONFIG or --kubeconfig)');
    if (!findBinaries() && !existsSync(join(REPO_ROOT, 'test/controlplane/build.sh'))) {
      throw new Error(
        'no Kubernetes cluster configured and no local control plane available: set KUBECONFIG',
      );
    }
    const state = await clusterUp({ log: (s) => log.info(s) });
    cfg.kubeconfig = state.kubeconfig;
    localCluster = true;
    log.warn(
      { kubeconfig: state.kubeconfig },
      '*** no cluster configured: using the LOCAL CONTROL PLANE ***',
    );
  }

  const kube = new Kube(loadKubeConfig(cfg.kubeconfig));
  kube.onRequest = (verb, status) => metrics.kubeRequests.inc({ method: verb, code: String(status) });
  if (localCluster) {
    await apply(kube, readManifests(CRD_DIR));
    const examples = cfg.examples ?? join(REPO_ROOT, 'deploy', 'examples');
    if (existsSync(examples)) {
      await apply(kube, readManifests(examples));
      log.info({ examples }, 'applied example manifests');
    }
  }

  const clusterId =
    cfg.clusterId ??
    (await kube.get({ group: '', version: 'v1', plural: 'namespaces' }, undefined, 'kube-system')).metadata
      .uid!;

  const api = createClient({
    baseUrl: apiUrl,
    apiKey,
    rateLimitPerMinute: cfg.apiRatePerMinute,
    onCall: (e) => {
      metrics.apiRequests.inc({ operation: e.operation, status: String(e.status) });
      metrics.apiDuration.observe({ operation: e.operation }, e.durationMs / 1000);
      if (e.status === 429) metrics.apiThrottled.inc();
    },
    onRetry: (e) => metrics.apiRetries.inc({ reason: e.reason }),
  });
  closers.push(() => api.close());

  const manager = new Manager({
    kube,
    api,
    bindings: BINDINGS,
    log,
    metrics,
    clusterId,
    identity: `${hostname()}-${process.pid}`,
    namespaces: cfg.namespaces,
    concurrency: cfg.concurrency,
    resyncMs: cfg.resyncMs,
    drainMs: cfg.drainMs,
    leaderElection: {
      enabled: cfg.leaderElect,
      namespace: cfg.leaderElectionNamespace,
      name: cfg.leaderElectionId,
    },
    listen: cfg.listen,
    probeListen: cfg.probeListen,
  });
  log.info(
    {
      apiUrl,
      namespaces: cfg.namespaces.length ? cfg.namespaces : 'all',
      kinds: BINDINGS.map((b) => b.kind),
      clusterId,
      leaderElect: cfg.leaderElect,
    },
    'starting edge-operator',
  );
  // Gauges of online sessions and tunnels, so dashboards can alert on agents going away.
  // Only the leader polls: standbys would spend the account's request budget for nothing.
  const poll = async () => {
    if (!manager.isLeader) return;
    try {
      let sessions = 0;
      for await (const _ of api.tunnelSessions.list()) sessions++;
      let tunnels = 0;
      for await (const _ of api.tunnels.list()) tunnels++;
      metrics.sessionsOnline.set(sessions);
      metrics.tunnelsOnline.set(tunnels);
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'could not poll sessions and tunnels');
    }
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
    },
  };
}
