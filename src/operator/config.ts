// Operator configuration: every setting is a flag and an environment variable.
import { readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { normalizeUrl } from './runtime/accounts/resolve.ts';
import { ConfigError } from './runtime/config-error.ts';
import { parseListen } from './runtime/listen-address.ts';

export { ConfigError, parseListen };

/** A value quoted for an error message: control characters escaped, so the message stays one line. */
const quote = (v: string) => JSON.stringify(v);

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/**
 * Plain decimal only: digits, a fraction with s, m or h (1.5m), a unit (ms, s, m, h; none:
 * seconds). No sign, exponent, hex, spaces or leading dot; a whole number of milliseconds.
 */
export function parseDuration(s: string, flag = 'duration'): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(s);
  const unit = (m?.[2] ?? 's') as keyof typeof UNIT_MS;
  const ms = m ? Number(m[1]) * UNIT_MS[unit] : Number.NaN;
  if (!m || !Number.isFinite(ms) || Math.abs(ms - Math.round(ms)) > 1e-6)
    throw new ConfigError(
      `${flag}: not a duration: ${quote(s)} (plain decimal with a unit, e.g. 30s, 1.5m, 1h, 500ms; whole milliseconds)`,
    );
  return Math.round(ms);
}

/** A duration within bounds; `zero` allows 0 as "off". */
export function boundedDuration(flag: string, value: string, min: number, max: number, zero = false): number {
  const ms = parseDuration(value, flag);
  if (zero && ms === 0) return 0;
  if (ms < min || ms > max)
    throw new ConfigError(
      `${flag}: ${value} is out of range (${formatMs(min)} to ${formatMs(max)}${zero ? ', or 0 for off' : ''})`,
    );
  return ms;
}

const formatMs = (ms: number) =>
  ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : ms % 60_000 === 0 ? `${ms / 60_000}m` : `${ms / 1000}s`;

/**
 * A number within bounds, in plain decimal only: digits, and a fraction unless `integer`
 * (no sign, exponent, hex, spaces, leading dot or Infinity).
 */
export function boundedNumber(
  flag: string,
  value: string,
  min: number,
  max: number,
  integer = false,
): number {
  if (!(integer ? /^\d+$/ : /^\d+(?:\.\d+)?$/).test(value))
    throw new ConfigError(
      integer
        ? `${flag}: not a whole number: ${quote(value)} (digits only, e.g. ${min})`
        : `${flag}: not a number: ${quote(value)} (plain decimal, e.g. ${min} or ${min}.5)`,
    );
  const n = Number(value);
  if (!(n >= min && n <= max)) throw new ConfigError(`${flag}: ${value} is out of range (${min} to ${max})`);
  return n;
}

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);
/** Booleans from flags and environment variables, strictly: a typo is an error, not "false". */
export function parseBool(flag: string, value: string | boolean | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  if (typeof value === 'boolean') return value;
  const v = value.trim().toLowerCase();
  if (TRUE.has(v)) return true;
  if (FALSE.has(v)) return false;
  throw new ConfigError(`${flag}: expected true or false (or yes/no, 1/0), got ${quote(value)}`);
}

export const BOUNDS = {
  concurrency: { min: 1, max: 64 },
  apiRateLimit: { min: 1, max: 1_000_000 },
  resyncMs: { min: 10_000, max: 24 * 3_600_000 },
  drainMs: { min: 0, max: 10 * 60_000 },
  apiTimeoutMs: { min: 1000, max: 5 * 60_000 },
  agentMetricsMs: { min: 1000, max: 24 * 3_600_000 },
  watchIdleMs: { min: 5000, max: 3_600_000 },
} as const;
const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];
const LOG_FORMATS = ['auto', 'json', 'text'];
/** Kubernetes label values: what --instance may be. */
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$/;
/**
 * --cluster-id: it is compared byte for byte with the owner marker of every remote resource,
 * so nothing invisible may hide in it: printable ASCII without spaces, at most 63 characters.
 */
const CLUSTER_ID = /^[!-~]{1,63}$/;
/** An API key travels in an Authorization header: printable ASCII without spaces. */
const API_KEY = /^[!-~]+$/;

/** Refuses a key that cannot be one, without ever printing it. */
function checkApiKey(key: string, source: string): string {
  if (API_KEY.test(key)) return key;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for exactly those
  const what = /[\x00-\x1f\x7f]/.test(key)
    ? 'a control character (such as a newline)'
    : 'a space or a non-ASCII character';
  throw new ConfigError(
    `${source} contains ${what}; a key is printable ASCII without spaces (the key is not shown)`,
  );
}

export interface OperatorConfig {
  kubeconfig?: string;
  apiUrl?: string;
  apiKey?: string;
  /** Run against the embedded in-memory emulator (demo); never implied outside --local. */
  emulator: boolean;
  /** Start the local control plane and use it, whatever kubeconfig the machine has. */
  local: boolean;
  /** Manage only objects labelled edge.tunnel.dev/instance=<instance>; empty: only unlabelled ones. */
  instance?: string;
  namespaces: string[];
  /** Namespaces whose objects' remote resources any namespace may reference by id. */
  sharedNamespaces: string[];
  /** With --namespaces: the RoleBinding in each giving the operator its rights, held while it has work there. */
  accessBinding?: string;
  /** Whether the installation's own account serves objects naming no account (else Stalled/NoAccount). */
  defaultAccount: boolean;
  /** apiURLs EdgeAccounts and ClusterEdgeAccounts may use besides --api-url. */
  accountApiUrls: string[];
  /** Connect, headers and body timeout of every Edge API call. */
  apiTimeoutMs: number;
  concurrency: number;
  resyncMs: number;
  listen: string;
  /** undefined: on, except against the local control plane. */
  leaderElect?: boolean;
  leaderElectionNamespace: string;
  leaderElectionId: string;
  clusterId?: string;
  logLevel: string;
  /** text: one readable line per entry (a terminal); json: one JSON object per line (log pipelines). */
  logFormat: 'json' | 'text';
  apiRatePerMinute: number;
  drainMs: number;
  examples?: string;
  agentMetricsMs: number;
  /** A watch silent this long is cut and reopened; /healthz fails at twice it without progress. */
  watchIdleMs: number;
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
      new Option('--api-url <url>', 'Edge API base URL (required unless --emulator or --local)').env(
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
      new Option(
        '--emulator [bool]',
        'use the embedded in-memory API emulator instead of a real account (demos only)',
      ).env('EDGE_EMULATOR'),
    )
    .addOption(
      new Option(
        '--local',
        'start the local control plane (built from source, never your kubeconfig) and, without --api-url, the embedded emulator',
      ),
    )
    .addOption(
      new Option(
        '--instance <name>',
        'manage only objects labelled edge.tunnel.dev/instance=<name> (default: only objects without the label)',
      ).env('EDGE_INSTANCE'),
    )
    .addOption(
      new Option('--namespaces <list>', 'comma-separated namespaces to watch (default: all)')
        .env('WATCH_NAMESPACES')
        .default(''),
    )
    .addOption(
      new Option(
        '--concurrency <n>',
        `reconciles in parallel per kind (${BOUNDS.concurrency.min}..${BOUNDS.concurrency.max})`,
      )
        .env('EDGE_CONCURRENCY')
        .default('4'),
    )
    .addOption(
      new Option('--resync-period <duration>', 'drift check period per object (jittered; 10s..24h)')
        .env('EDGE_RESYNC_PERIOD')
        .default('10m'),
    )
    .addOption(
      new Option('--listen <host:port>', 'address for /metrics, /healthz and /readyz')
        .env('EDGE_LISTEN')
        .default(inCluster ? '0.0.0.0:8080' : '127.0.0.1:8080'),
    )
    .addOption(
      new Option(
        '--leader-elect [bool]',
        'leader election on a Lease (default: on, except with --local)',
      ).env('EDGE_LEADER_ELECT'),
    )
    .addOption(
      new Option('--leader-election-namespace <ns>', 'namespace of the Lease')
        .env('POD_NAMESPACE')
        .default('default'),
    )
    .addOption(
      new Option(
        '--leader-election-id <name>',
        'name of the Lease (default: edge-operator, or edge-operator-<instance>)',
      ).env('EDGE_LEADER_ELECTION_ID'),
    )
    .addOption(
      new Option(
        '--cluster-id <id>',
        'identity written into remote resources (default: uid of kube-system)',
      ).env('EDGE_CLUSTER_ID'),
    )
    .addOption(
      new Option('--api-rate-limit <perMinute>', 'Edge API requests per minute the account allows (> 0)')
        .env('EDGE_API_RATE_LIMIT')
        .default('120'),
    )
    .addOption(
      new Option(
        '--access-binding <name>',
        'with --namespaces: the RoleBinding giving the operator its rights in each; it holds a finalizer on it while objects there await it, so that deleting such a namespace finishes (the chart sets it)',
      ).env('EDGE_ACCESS_BINDING'),
    )
    .addOption(
      new Option(
        '--shared-namespaces <list>',
        "comma-separated namespaces whose objects' remote resources any namespace may reference by id (default: none; raw ids reach only resources made outside the cluster)",
      )
        .env('EDGE_SHARED_NAMESPACES')
        .default(''),
    )
    .addOption(
      new Option(
        '--default-account [bool]',
        "the installation's own account (--api-url and its key) serves objects naming no account and no EdgeAccount named default in their namespace; false: they are Stalled/NoAccount and no key is needed",
      )
        .env('EDGE_DEFAULT_ACCOUNT')
        .default('true'),
    )
    .addOption(
      new Option(
        '--account-api-urls <list>',
        'comma-separated API URLs an EdgeAccount or ClusterEdgeAccount may set in spec.apiURL besides --api-url (default: none; another URL is Stalled/APIURLNotAllowed)',
      )
        .env('EDGE_ACCOUNT_API_URLS')
        .default(''),
    )
    .addOption(
      new Option(
        '--api-timeout <duration>',
        'connect, headers and body timeout of every Edge API call (1s..5m); an API that does not answer shows as ApiUnavailable',
      )
        .env('EDGE_API_TIMEOUT')
        .default('10s'),
    )
    .addOption(
      new Option('--drain-timeout <duration>', 'how long shutdown waits for in-flight reconciles (0..10m)')
        .env('EDGE_DRAIN_TIMEOUT')
        .default('30s'),
    )
    .addOption(
      new Option(
        '--watch-idle-timeout <duration>',
        'reopen a watch silent this long (no event, no bookmark); /healthz fails after twice it without progress (5s..1h)',
      )
        .env('EDGE_WATCH_IDLE_TIMEOUT')
        .default('3m'),
    )
    .addOption(new Option('--log-level <level>', LOG_LEVELS.join(', ')).env('LOG_LEVEL').default('info'))
    .addOption(
      new Option('--log-format <format>', 'json, text, or auto: text on a terminal, JSON otherwise')
        .env('LOG_FORMAT')
        .default('auto'),
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
      new Option('--examples <dir>', 'with --local: manifests to apply at start (default deploy/examples)'),
    );
}

type Raw = Record<string, string | boolean | undefined>;

function httpUrl(s: string): boolean {
  try {
    return /^https?:$/.test(new URL(s).protocol);
  } catch {
    return false;
  }
}

/** Reads and checks every setting; a bad one throws a ConfigError naming the flag. */
export function readConfig(o: Raw): OperatorConfig {
  let apiKey = (o.apiKey as string) || undefined;
  if (apiKey) apiKey = checkApiKey(apiKey, '--api-key (EDGE_API_KEY)');
  else if (o.apiKeyFile) {
    const file = o.apiKeyFile as string;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigError(
        `--api-key-file: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    // one trailing newline is how files end (echo, editors, --from-file); anything else is the key
    text = text.replace(/\r?\n$/, '');
    if (!text) throw new ConfigError(`--api-key-file: ${file} is empty`);
    apiKey = checkApiKey(text, `--api-key-file: the key in ${file}`);
  }
  const apiUrl = (o.apiUrl as string) || undefined;
  if (apiUrl && !httpUrl(apiUrl)) throw new ConfigError(`--api-url: ${quote(apiUrl)} is not an http(s) URL`);
  const accountApiUrls = String(o.accountApiUrls ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const u of accountApiUrls)
    if (!httpUrl(u) || !normalizeUrl(u))
      throw new ConfigError(
        `--account-api-urls: ${quote(u)} is not an http(s) URL without credentials, query or fragment`,
      );
  const emulator = parseBool('--emulator', o.emulator, false);
  if (emulator && apiUrl)
    throw new ConfigError(
      '--emulator and --api-url exclude each other: pick the embedded emulator or an API',
    );
  const instance = (o.instance as string) || undefined;
  if (instance !== undefined && !LABEL_VALUE.test(instance))
    throw new ConfigError(
      `--instance: ${quote(instance)} is not a valid label value (63 characters of [A-Za-z0-9-_.], alphanumeric at both ends)`,
    );
  const logLevel = String(o.logLevel);
  if (!LOG_LEVELS.includes(logLevel))
    throw new ConfigError(`--log-level: ${quote(logLevel)} is not one of ${LOG_LEVELS.join(', ')}`);
  const logFormat = String(o.logFormat);
  if (!LOG_FORMATS.includes(logFormat))
    throw new ConfigError(`--log-format: ${quote(logFormat)} is not one of ${LOG_FORMATS.join(', ')}`);
  const listen = String(o.listen);
  parseListen('--listen', listen);
  const probeListen = (o.probeListen as string) || undefined;
  if (probeListen) parseListen('--probe-listen', probeListen);
  const agentMetrics = String(o.agentMetricsInterval ?? '60s');
  const watchIdle = String(o.watchIdleTimeout ?? '3m');
  const clusterId = (o.clusterId as string) || undefined;
  if (clusterId !== undefined && !CLUSTER_ID.test(clusterId))
    throw new ConfigError(
      clusterId.length > 63
        ? `--cluster-id: ${clusterId.length} characters, at most 63 are allowed`
        : `--cluster-id: ${quote(clusterId)} may hold only printable ASCII without spaces (at most 63 characters)`,
    );
  return {
    kubeconfig: (o.kubeconfig as string) || undefined,
    apiUrl,
    apiKey,
    emulator,
    local: o.local === true,
    instance,
    namespaces: String(o.namespaces ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    accessBinding: (o.accessBinding as string) || undefined,
    sharedNamespaces: String(o.sharedNamespaces ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    defaultAccount: parseBool('--default-account', o.defaultAccount, true),
    accountApiUrls,
    apiTimeoutMs: boundedDuration(
      '--api-timeout',
      String(o.apiTimeout),
      BOUNDS.apiTimeoutMs.min,
      BOUNDS.apiTimeoutMs.max,
    ),
    concurrency: boundedNumber(
      '--concurrency',
      String(o.concurrency),
      BOUNDS.concurrency.min,
      BOUNDS.concurrency.max,
      true,
    ),
    resyncMs: boundedDuration(
      '--resync-period',
      String(o.resyncPeriod),
      BOUNDS.resyncMs.min,
      BOUNDS.resyncMs.max,
    ),
    listen,
    leaderElect: o.leaderElect === undefined ? undefined : parseBool('--leader-elect', o.leaderElect, true),
    leaderElectionNamespace: String(o.leaderElectionNamespace),
    leaderElectionId:
      (o.leaderElectionId as string) || (instance ? `edge-operator-${instance}` : 'edge-operator'),
    clusterId,
    logLevel,
    logFormat:
      logFormat === 'auto' ? (process.stdout.isTTY ? 'text' : 'json') : (logFormat as 'json' | 'text'),
    apiRatePerMinute: boundedNumber(
      '--api-rate-limit',
      String(o.apiRateLimit),
      BOUNDS.apiRateLimit.min,
      BOUNDS.apiRateLimit.max,
      true,
    ),
    drainMs: boundedDuration(
      '--drain-timeout',
      String(o.drainTimeout),
      BOUNDS.drainMs.min,
      BOUNDS.drainMs.max,
      true,
    ),
    examples: o.examples as string | undefined,
    probeListen,
    agentMetricsMs: boundedDuration(
      '--agent-metrics-interval',
      agentMetrics,
      BOUNDS.agentMetricsMs.min,
      BOUNDS.agentMetricsMs.max,
      true,
    ),
    watchIdleMs: boundedDuration(
      '--watch-idle-timeout',
      watchIdle,
      BOUNDS.watchIdleMs.min,
      BOUNDS.watchIdleMs.max,
    ),
  };
}
