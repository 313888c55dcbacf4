// Operator configuration: every setting is a flag and an environment variable.
import { readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';

export function parseDuration(s: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(s.trim());
  if (!m) throw new Error(`not a duration: ${s} (use e.g. 30s, 10m, 1h)`);
  const n = Number(m[1]);
  return Math.round(n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h']);
}

export interface OperatorConfig {
  kubeconfig?: string;
  apiUrl?: string;
  apiKey?: string;
  namespaces: string[];
  concurrency: number;
  resyncMs: number;
  listen: string;
  leaderElect: boolean;
  leaderElectionNamespace: string;
  leaderElectionId: string;
  clusterId?: string;
  logLevel: string;
  apiRatePerMinute: number;
  drainMs: number;
  localCluster: boolean;
  examples?: string;
  agentMetricsMs: number;
  probeListen?: string;
}

export function addOperatorOptions(cmd: Command): Command {
  const inCluster = !!process.env.KUBERNETES_SERVICE_HOST;
  return cmd
    .addOption(
      new Option(
        '--kubeconfig <path>',
        'kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)',
      ).env('KUBECONFIG'),
    )
    .addOption(
      new Option('--api-url <url>', 'Edge API base URL (default: start the embedded emulator)').env(
        'EDGE_API_URL',
      ),
    )
    .addOption(
      new Option('--api-key <key>', 'Edge API key (prefer the env var or a key file)').env('EDGE_API_KEY'),
    )
    .addOption(
      new Option('--api-key-file <path>', 'file holding the API key (a mounted Secret)').env(
        'EDGE_API_KEY_FILE',
      ),
    )
    .addOption(
      new Option('--namespaces <list>', 'comma-separated namespaces to watch (default: all)')
        .env('WATCH_NAMESPACES')
        .default(''),
    )
    .addOption(
      new Option('--concurrency <n>', 'reconciles in parallel per kind').env('EDGE_CONCURRENCY').default('4'),
    )
    .addOption(
      new Option('--resync-period <duration>', 'drift check period per object (jittered)')
        .env('EDGE_RESYNC_PERIOD')
        .default('10m'),
    )
    .addOption(
      new Option('--listen <host:port>', 'address for /metrics, /healthz and /readyz')
        .env('EDGE_LISTEN')
        .default('0.0.0.0:8080'),
    )
    .addOption(
      new Option('--leader-elect [bool]', 'leader election on a Lease (default: on in a cluster)')
        .env('EDGE_LEADER_ELECT')
        .default(String(inCluster)),
    )
    .addOption(
      new Option('--leader-election-namespace <ns>', 'namespace of the Lease')
        .env('POD_NAMESPACE')
        .default('default'),
    )
    .addOption(
      new Option('--leader-election-id <name>', 'name of the Lease')
        .env('EDGE_LEADER_ELECTION_ID')
        .default('edge-operator'),
    )
    .addOption(
      new Option(
        '--cluster-id <id>',
        'identity written into remote resources (default: uid of kube-system)',
      ).env('EDGE_CLUSTER_ID'),
    )
    .addOption(
      new Option('--api-rate-limit <perMinute>', 'Edge API requests per minute the account allows')
        .env('EDGE_API_RATE_LIMIT')
        .default('120'),
    )
    .addOption(
      new Option('--drain-timeout <duration>', 'how long shutdown waits for in-flight reconciles')
        .env('EDGE_DRAIN_TIMEOUT')
        .default('30s'),
    )
    .addOption(
      new Option('--log-level <level>', 'trace, debug, info, warn, error').env('LOG_LEVEL').default('info'),
    )
    .addOption(
      new Option(
        '--probe-listen <host:port>',
        'separate address for /healthz and /readyz (default: --listen)',
      ).env('EDGE_PROBE_LISTEN'),
    )
    .addOption(
      new Option(
        '--agent-metrics-interval <duration>',
        'poll online sessions and tunnels for gauges this often (0: off)',
      )
        .env('EDGE_AGENT_METRICS_INTERVAL')
        .default('60s'),
    )
    .addOption(
      new Option('--no-local-cluster', 'never start the local control plane when no cluster is configured'),
    )
    .addOption(
      new Option(
        '--examples <dir>',
        'with the local control plane: manifests to apply at start (default deploy/examples)',
      ),
    );
}

export function readConfig(o: Record<string, string | boolean | undefined>): OperatorConfig {
  let apiKey = o.apiKey as string | undefined;
  if (!apiKey && o.apiKeyFile) apiKey = readFileSync(o.apiKeyFile as string, 'utf8').trim();
  const concurrency = Number(o.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new Error('--concurrency must be a whole number >= 1');
  return {
    kubeconfig: (o.kubeconfig as string) || undefined,
    apiUrl: (o.apiUrl as string) || undefined,
    apiKey,
    namespaces: String(o.namespaces ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    concurrency,
    resyncMs: parseDuration(String(o.resyncPeriod)),
    listen: String(o.listen),
    leaderElect: o.leaderElect === true || o.leaderElect === 'true',
    leaderElectionNamespace: String(o.leaderElectionNamespace),
    leaderElectionId: String(o.leaderElectionId),
    clusterId: (o.clusterId as string) || undefined,
    logLevel: String(o.logLevel),
    apiRatePerMinute: Number(o.apiRateLimit),
    drainMs: parseDuration(String(o.drainTimeout)),
    localCluster: o.localCluster !== false,
    examples: o.examples as string | undefined,
    probeListen: (o.probeListen as string) || undefined,
    agentMetricsMs:
      String(o.agentMetricsInterval ?? '60s') === '0'
        ? 0
        : parseDuration(String(o.agentMetricsInterval ?? '60s')),
  };
}
