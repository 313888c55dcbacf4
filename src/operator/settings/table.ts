// Every operator setting, written once: its flag, env var, default, bounds, help and chart
// value. The flags and --help (config.ts), the checks, and the flag table in
// docs/reference.md (`npm run docs`, a test fails when stale) all derive from this table.
import { normalizeUrl } from '../runtime/accounts/resolve.ts';
import { ConfigError } from '../runtime/manager/config-error.ts';
import { parseListen } from '../runtime/manager/listen-address.ts';
import {
  address,
  bool,
  duration,
  type Kind,
  kind,
  list,
  oneOf,
  optionalBool,
  optionalWhole,
  str,
  switchOnly,
  text,
  whole,
} from './kinds.ts';
import { isHttpUrl, quote } from './values.ts';

export type { Raw } from './kinds.ts';

/**
 * A URL the API key is sent to: http(s), without credentials, query or fragment (an account's
 * status names the URL it is refused; a password there would be shown to every tenant). The
 * error shows the URL with its credentials masked: stderr goes to the pod's log.
 */
export const keyUrl = (flag: string, s: string) => {
  if (!isHttpUrl(s) || !normalizeUrl(s))
    throw new ConfigError(
      `${flag}: ${quote(s.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1***@'))} is not an http(s) URL without credentials, query or fragment`,
    );
};

export interface Setting<T> {
  flag: `--${string}`;
  env?: string;
  /** The raw value when neither the flag nor the env var gives one. */
  default?: string | (() => string);
  /** The default as people read it, when it is not a fixed value (or reads better in words). */
  defaultText?: string;
  kind: Kind<T>;
  /** One text for --help and the docs (backticks are dropped in --help). */
  help: string;
  /** The chart value that sets it, if any. */
  chart?: string;
}

/** Kubernetes label values: what --instance may be. */
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$/;
/**
 * --cluster-id: it is compared byte for byte with the owner marker of every remote resource,
 * so nothing invisible may hide in it: printable ASCII without spaces, at most 63 characters.
 */
export const CLUSTER_ID = /^[!-~]{1,63}$/;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/** Typed by its kind, so the table's values have the types the operator reads. */
const setting = <T>(s: Setting<T>): Setting<T> => s;

/** In the order of the docs' table; keyed by the name the operator reads the value under. */
export const SETTINGS = {
  kubeconfig: setting({
    flag: '--kubeconfig',
    env: 'KUBECONFIG',
    defaultText: 'in-cluster, then `~/.kube/config`',
    kind: text('<path>'),
    help: 'kubeconfig file of the cluster to manage',
  }),
  context: setting({
    flag: '--context',
    env: 'EDGE_KUBE_CONTEXT',
    defaultText: "the kubeconfig's current context",
    kind: text('<name>'),
    help: 'kubeconfig context of the cluster to manage (one the kubeconfig does not have: an error naming it)',
  }),
  apiUrl: setting({
    flag: '--api-url',
    env: 'EDGE_API_URL',
    defaultText: 'required, unless `--emulator` or `--local`',
    kind: text('<url>', keyUrl),
    help: 'Edge API base URL (http or https)',
    chart: 'api.url',
  }),
  emulator: setting({
    flag: '--emulator',
    env: 'EDGE_EMULATOR',
    default: 'false',
    kind: bool(false),
    help: 'demo: the embedded in-memory emulator instead of an account (never implied outside `--local`)',
    chart: 'api.emulator',
  }),
  local: setting({
    flag: '--local',
    kind: switchOnly,
    help: 'start the local control plane (built from source, never your kubeconfig) and, without `--api-url`, the embedded emulator; `npm start`',
  }),
  instance: setting({
    flag: '--instance',
    env: 'EDGE_INSTANCE',
    defaultText: 'none: only objects without the label',
    kind: text('<name>', (flag, s) => {
      if (!LABEL_VALUE.test(s))
        throw new ConfigError(
          `${flag}: ${quote(s)} is not a valid label value (63 characters of [A-Za-z0-9-_.], alphanumeric at both ends)`,
        );
    }),
    help: 'manage only objects labelled `edge.tunnel.dev/instance=<name>`',
    chart: 'instance',
  }),
  apiKey: setting({
    flag: '--api-key',
    env: 'EDGE_API_KEY',
    kind: text('<key>'),
    help: 'API key (prefer the env var or a file); printable ASCII without spaces',
  }),
  apiKeyFile: setting({
    flag: '--api-key-file',
    env: 'EDGE_API_KEY_FILE',
    kind: text('<path>'),
    help: 'file with the key, e.g. a mounted Secret; one trailing newline is dropped',
    chart: 'api.existingSecret',
  }),
  namespaces: setting({
    flag: '--namespaces',
    env: 'WATCH_NAMESPACES',
    default: '',
    defaultText: 'all',
    kind: list(),
    help: 'comma-separated namespaces to watch',
    chart: 'watchNamespaces',
  }),
  accessBinding: setting({
    flag: '--access-binding',
    env: 'EDGE_ACCESS_BINDING',
    kind: text('<name>'),
    help: 'with --namespaces: the RoleBinding giving the operator its rights in each; it holds a finalizer on it while objects there await it, so that deleting such a namespace finishes (the chart sets it)',
  }),
  concurrency: setting({
    flag: '--concurrency',
    env: 'EDGE_CONCURRENCY',
    default: '4',
    kind: whole('<n>', 1, 64),
    help: 'reconciles at work in parallel per kind (one waiting for the budget of its account holds none)',
    chart: 'concurrency',
  }),
  resyncMs: setting({
    flag: '--resync-period',
    env: 'EDGE_RESYNC_PERIOD',
    default: '10m',
    kind: duration(10_000, 24 * HOUR),
    help: 'drift check per object, jittered',
    chart: 'resyncPeriod',
  }),
  listen: setting({
    flag: '--listen',
    env: 'EDGE_LISTEN',
    default: () => (process.env.KUBERNETES_SERVICE_HOST ? ':8080' : '127.0.0.1:8080'),
    defaultText: ':8080 (every address, IPv6 and IPv4) in a cluster, else 127.0.0.1:8080',
    kind: address,
    help: 'address of `/metrics`, `/healthz` and `/readyz`',
  }),
  probeListen: setting({
    flag: '--probe-listen',
    env: 'EDGE_PROBE_LISTEN',
    defaultText: '`--listen`',
    kind: text('<host:port>', parseListen),
    help: 'a separate address for `/healthz` and `/readyz` only',
  }),
  agentMetricsMs: setting({
    flag: '--agent-metrics-interval',
    env: 'EDGE_AGENT_METRICS_INTERVAL',
    default: '60s',
    kind: duration(1000, 24 * HOUR, true),
    help: 'poll online sessions and tunnels for the gauges',
    chart: 'agentMetricsInterval',
  }),
  leaderElect: setting({
    flag: '--leader-elect',
    env: 'EDGE_LEADER_ELECT',
    defaultText: 'on, except `--local`',
    kind: optionalBool,
    help: 'Lease-based leader election (15 s lease, 10 s renew deadline, 2 s retry)',
  }),
  leaderElectionNamespace: setting({
    flag: '--leader-election-namespace',
    env: 'POD_NAMESPACE',
    default: 'default',
    kind: kind('<ns>', (_flag, v) => str(v)),
    help: 'namespace of the Lease (and of the digest key Secret)',
  }),
  leaderElectionId: setting({
    flag: '--leader-election-id',
    env: 'EDGE_LEADER_ELECTION_ID',
    defaultText: 'edge-operator[-instance]',
    kind: text('<name>'),
    help: 'name of the Lease',
  }),
  clusterId: setting({
    flag: '--cluster-id',
    env: 'EDGE_CLUSTER_ID',
    defaultText: 'uid of `kube-system`',
    kind: text('<id>', (flag, s) => {
      if (!CLUSTER_ID.test(s))
        throw new ConfigError(
          s.length > 63
            ? `${flag}: ${s.length} characters, at most 63 are allowed`
            : `${flag}: ${quote(s)} may hold only printable ASCII without spaces (at most 63 characters)`,
        );
    }),
    help: 'identity written into remote resources (at most 63 characters, printable ASCII without spaces)',
    chart: 'clusterId',
  }),
  apiRatePerMinute: setting({
    flag: '--api-rate-limit',
    env: 'EDGE_API_RATE_LIMIT',
    default: '120',
    kind: whole('<perMinute>', 1, 1_000_000),
    help: 'requests per minute the account allows',
    chart: 'api.rateLimitPerMinute',
  }),
  apiTimeoutMs: setting({
    flag: '--api-timeout',
    env: 'EDGE_API_TIMEOUT',
    default: '10s',
    kind: duration(1000, 5 * MINUTE),
    help: 'connect, headers and body timeout of every API call; an API that does not answer shows as `APIUnavailable`',
    chart: 'api.timeout',
  }),
  sharedNamespaces: setting({
    flag: '--shared-namespaces',
    env: 'EDGE_SHARED_NAMESPACES',
    default: '',
    defaultText: 'none',
    kind: list(),
    help: "comma-separated namespaces whose objects' remote resources any namespace may reference by raw id (otherwise raw ids reach only resources made outside the cluster)",
    chart: 'sharedNamespaces',
  }),
  adoptFrom: setting({
    flag: '--adopt-from',
    env: 'EDGE_ADOPT_FROM',
    default: '',
    defaultText: "the operator's namespace",
    kind: list(),
    help: "comma-separated namespaces whose objects may adopt, observe or reference by raw id the installation account's resources that no object of theirs made (`*`: every namespace; elsewhere `Stalled/AdoptionNotAllowed`)",
    chart: 'defaultAccount.adoptFrom',
  }),
  maxAccountsPerNamespace: setting({
    flag: '--max-accounts-per-namespace',
    env: 'EDGE_MAX_ACCOUNTS_PER_NAMESPACE',
    default: '3',
    kind: whole('<n>', 1, 10_000),
    help: 'EdgeAccounts a namespace may have in use; the oldest are served, any further one is `Stalled/AccountLimit`',
    chart: 'accounts.maxPerNamespace',
  }),
  maxAccountRatePerMinute: setting({
    flag: '--max-account-rate-limit',
    env: 'EDGE_MAX_ACCOUNT_RATE_LIMIT',
    defaultText: '`--api-rate-limit`',
    kind: optionalWhole('<perMinute>', 1, 1_000_000),
    help: "the highest `spec.rateLimitPerMinute` an EdgeAccount may set (above it: `Stalled/RateLimitNotAllowed`); ClusterEdgeAccounts, the platform's, are not bounded",
    chart: 'accounts.maxRateLimitPerMinute',
  }),
  defaultAccount: setting({
    flag: '--default-account',
    env: 'EDGE_DEFAULT_ACCOUNT',
    default: 'true',
    kind: bool(true),
    help: "the installation's own account (`--api-url` and its key) serves objects that name no account and whose namespace has no EdgeAccount `default`; `false`: they are `Stalled/NoAccount` and no key is needed",
    chart: 'defaultAccount.enabled',
  }),
  accountApiUrls: setting({
    flag: '--account-api-urls',
    env: 'EDGE_ACCOUNT_API_URLS',
    default: '',
    defaultText: 'none',
    kind: list(keyUrl),
    help: 'comma-separated API URLs an EdgeAccount or ClusterEdgeAccount may set in `spec.apiURL` besides `--api-url` (any other: `Stalled/APIURLNotAllowed`)',
    chart: 'accounts.allowedAPIURLs',
  }),
  drainMs: setting({
    flag: '--drain-timeout',
    env: 'EDGE_DRAIN_TIMEOUT',
    default: '30s',
    kind: duration(0, 10 * MINUTE, true),
    help: 'how long shutdown waits for in-flight reconciles',
  }),
  watchIdleMs: setting({
    flag: '--watch-idle-timeout',
    env: 'EDGE_WATCH_IDLE_TIMEOUT',
    default: '3m',
    kind: duration(5000, HOUR),
    help: 'a watch with no event or bookmark for this long is reopened; `/healthz` fails after twice it without progress',
    chart: 'extraEnv',
  }),
  logLevel: setting({
    flag: '--log-level',
    env: 'LOG_LEVEL',
    default: 'info',
    kind: oneOf('<level>', LOG_LEVELS),
    help: 'pino level',
    chart: 'logLevel',
  }),
  logFormat: setting({
    flag: '--log-format',
    env: 'LOG_FORMAT',
    default: 'auto',
    kind: oneOf('<format>', ['auto', 'json', 'text']),
    help: 'how log lines look: `auto` is `text` on a terminal (a readable line per entry) and `json` otherwise (one object per line, as in a pod)',
  }),
  examples: setting({
    flag: '--examples',
    defaultText: '`deploy/examples`',
    kind: text('<dir>'),
    help: 'with `--local`: manifests applied at start',
  }),
};

export type SettingName = keyof typeof SETTINGS;
/** Each setting's value, as its kind reads it. */
export type SettingValues = {
  [K in SettingName]: (typeof SETTINGS)[K] extends Setting<infer T> ? T : never;
};

/** The name commander gives a flag's value: --resync-period -> resyncPeriod. */
export const attributeOf = (flag: string) =>
  flag.slice(2).replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());

/** The default a setting takes when neither its flag nor its env var is given. */
export const defaultOf = (s: Setting<unknown>): string | undefined =>
  typeof s.default === 'function' ? s.default() : s.default;

/** The help text with its bounds or choices: "reconciles in parallel per kind (1..64)". */
export const helpOf = (s: Setting<unknown>) => (s.kind.range ? `${s.help} (${s.kind.range})` : s.help);
