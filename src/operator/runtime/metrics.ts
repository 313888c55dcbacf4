// One prom-client registry with controller-runtime's metric names, plus the API's own.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { VERSION } from '../../version.ts';

/** Reconciles and workers (controller-runtime's names). */
function controllerMetrics(r: Registry[], buckets: number[]) {
  return {
    reconcileTotal: new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
      registers: r,
    }),
    reconcileErrors: new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers: r,
    }),
    reconcileTime: new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets,
      registers: r,
    }),
    activeWorkers: new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'],
      registers: r,
    }),
  };
}

/** The work queues (controller-runtime's names). */
function queueMetrics(r: Registry[], buckets: number[]) {
  return {
    queueDepth: new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames: ['name'],
      registers: r,
    }),
    queueAdds: new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames: ['name'],
      registers: r,
    }),
    queueRetries: new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue',
      labelNames: ['name'],
      registers: r,
    }),
    queueDuration: new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames: ['name'],
      buckets,
      registers: r,
    }),
    queueWait: new Histogram({
      name: 'edge_operator_queue_wait_seconds',
      help: 'How long an object waited in its queue, by priority (urgent: edits and deletes; high: creates and events; low: observation)',
      labelNames: ['name', 'priority'],
      buckets,
      registers: r,
    }),
    workDuration: new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes',
      labelNames: ['name'],
      buckets,
      registers: r,
    }),
  };
}

/** The Edge API and the Kubernetes API. */
function apiMetrics(r: Registry[], buckets: number[]) {
  return {
    apiRequests: new Counter({
      name: 'edge_api_requests_total',
      help: 'Edge API calls by operation, HTTP status (0: no response) and account (installation, EdgeAccount/<namespace>/<name> or ClusterEdgeAccount/<name>)',
      labelNames: ['operation', 'status', 'account'],
      registers: r,
    }),
    apiDuration: new Histogram({
      name: 'edge_api_request_duration_seconds',
      help: 'Edge API call latency by operation',
      labelNames: ['operation'],
      buckets,
      registers: r,
    }),
    apiRetries: new Counter({
      name: 'edge_api_retries_total',
      help: 'Edge API calls retried, by reason and account',
      labelNames: ['reason', 'account'],
      registers: r,
    }),
    apiThrottled: new Counter({
      name: 'edge_api_throttled_total',
      help: 'Edge API answers of 429 (the account is being rate limited), by account',
      labelNames: ['account'],
      registers: r,
    }),
    apiLimiterWait: new Gauge({
      name: 'edge_api_rate_limiter_wait_seconds_total',
      help: 'Seconds calls waited on the client-side rate limiter, by account',
      labelNames: ['account'],
      registers: r,
    }),
    kubeRequests: new Counter({
      name: 'rest_client_requests_total',
      help: 'Kubernetes API requests by method and code',
      labelNames: ['method', 'code'],
      registers: r,
    }),
  };
}

/** Leadership, tunnels, objects, events and bulk observation. */
function operatorMetrics(r: Registry[], buckets: number[]) {
  return {
    leader: new Gauge({
      name: 'leader_election_master_status',
      help: '1 when this replica is the leader',
      labelNames: ['name'],
      registers: r,
    }),
    sessionsOnline: new Gauge({
      name: 'edge_tunnel_sessions_online',
      help: 'Online agent sessions on the account (polled)',
      registers: r,
    }),
    tunnelsOnline: new Gauge({
      name: 'edge_tunnels_online',
      help: 'Online tunnels on the account (polled)',
      registers: r,
    }),
    managedObjects: new Gauge({
      name: 'edge_operator_managed_objects',
      help: 'Custom resources in the informer cache, by kind',
      labelNames: ['kind'],
      registers: r,
    }),
    eventsRecorded: new Counter({
      name: 'edge_operator_events_total',
      help: 'Kubernetes Events recorded, by reason (repeats within 5 minutes are dropped, not counted)',
      labelNames: ['reason'],
      registers: r,
    }),
    observations: new Counter({
      name: 'edge_operator_observations_total',
      help: 'Bulk observations (one paged list of a kind), by kind and result',
      labelNames: ['kind', 'result'],
      registers: r,
    }),
    observedResources: new Gauge({
      name: 'edge_operator_observed_resources',
      help: 'Remote resources of a kind in the last bulk observation, by account',
      labelNames: ['kind', 'account'],
      registers: r,
    }),
    observationSeconds: new Histogram({
      name: 'edge_operator_observation_duration_seconds',
      help: 'Time to list every remote resource of a kind',
      labelNames: ['kind'],
      buckets,
      registers: r,
    }),
  };
}

/** The API budget by priority, objects and watches read at each scrape. */
function budgetMetrics(r: Registry[]) {
  return {
    budgetWait: new Gauge({
      name: 'edge_api_budget_wait_seconds',
      help: 'Total time API calls waited for the account budget, by priority (high: user changes; low: observation) and account',
      labelNames: ['priority', 'account'],
      registers: r,
    }),
    budgetQueued: new Gauge({
      name: 'edge_api_budget_waiting',
      help: 'API calls waiting for the account budget now, by priority and account',
      labelNames: ['priority', 'account'],
      registers: r,
    }),
    budgetWaitDuration: new Histogram({
      name: 'edge_api_budget_wait_duration_seconds',
      help: 'How long each API call waited for its turn at the account budget, by priority and account (namespaces take turns within a priority)',
      labelNames: ['priority', 'account'],
      buckets: [0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: r,
    }),
    budgetFlows: new Gauge({
      name: 'edge_api_budget_namespaces_waiting',
      help: 'Namespaces with API calls waiting for the account budget now (they take turns), by account',
      labelNames: ['account'],
      registers: r,
    }),
    queueFlows: new Gauge({
      name: 'edge_operator_workqueue_namespaces',
      help: 'Namespaces with work queued now, by controller (they take turns for the workers)',
      labelNames: ['name'],
      registers: r,
    }),
    tunnelsOnlineByObject: new Gauge({
      name: 'edge_operator_tunnels_online',
      help: 'Online tunnels serving an object of a kind tunnels serve (backends, routes, edges), polled every --agent-metrics-interval',
      labelNames: ['kind', 'namespace', 'name'],
      registers: r,
    }),
    objectConditions: new Gauge({
      name: 'edge_operator_object_conditions',
      help: 'Managed objects by kind, namespace and condition status (Ready, Reconciling, Stalled, Paused, TunnelsOnline)',
      labelNames: ['kind', 'namespace', 'condition', 'status'],
      registers: r,
    }),
    informerProgress: new Gauge({
      name: 'edge_operator_informer_last_progress_timestamp_seconds',
      help: 'When a watch last made progress (a list, a watch opened, an event): /healthz fails after twice the idle watchdog',
      labelNames: ['resource', 'watch_namespace'],
      registers: r,
    }),
    secretDataCached: new Gauge({
      name: 'edge_operator_secret_data_cached',
      help: 'Secrets whose data the operator holds in memory: only those objects reference',
      registers: r,
    }),
  };
}

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const r = [registry];
  // which build runs, as Prometheus exporters say it: one series, always 1
  new Gauge({
    name: 'edge_operator_build_info',
    help: "The running operator's version and Node's (always 1)",
    labelNames: ['version', 'node'],
    registers: r,
  }).set({ version: VERSION, node: process.versions.node }, 1);
  const buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
  // registered in this order: the scrape lists them so
  return {
    registry,
    ...controllerMetrics(r, buckets),
    ...queueMetrics(r, buckets),
    ...apiMetrics(r, buckets),
    ...operatorMetrics(r, buckets),
    ...budgetMetrics(r),
  };
}
export type Metrics = ReturnType<typeof createMetrics>;
