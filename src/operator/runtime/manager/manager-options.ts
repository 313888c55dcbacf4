// What the manager is given: the cluster, the accounts, the kinds and their tuning. Apart from
// manager.ts so that the kinds' controllers read it without importing the manager.
import type { Logger } from 'pino';
import type { EdgeClient } from '../../../api/client.ts';
import type { AnyBinding } from '../bindings/binding.ts';
import type { Kube } from '../kube/kube.ts';
import type { Metrics } from '../metrics.ts';
import type { AccountsOptions } from './manager-accounts.ts';
import type { ProbeServer } from './probes.ts';

export interface ManagerOptions {
  kube: Kube;
  /** The installation's own account's client (absent when that account is turned off). */
  api?: EdgeClient;
  /**
   * Accounts (EdgeAccount, ClusterEdgeAccount): each object uses its own account's client;
   * without this option every object uses `api`.
   */
  accounts?: AccountsOptions;
  bindings: AnyBinding[];
  log: Logger;
  metrics: Metrics;
  clusterId: string;
  identity: string;
  /** Namespaces to watch; empty: all. */
  namespaces: string[];
  /** With namespaces: the RoleBinding giving the operator its rights in each (held by access.ts). */
  accessBinding?: string;
  concurrency: number;
  resyncMs: number;
  drainMs: number;
  leaderElection: { enabled: boolean; namespace: string; name: string };
  /** Objects with this instance label value; undefined: objects without the label. */
  instance?: string;
  /**
   * Namespaces whose objects' remote resources any namespace may reference by id (the
   * platform's shared resources); otherwise a raw id reaches only resources made outside the cluster.
   */
  sharedNamespaces?: string[];
  /** Where the probes are served; the manager answers them. */
  probes?: ProbeServer;
  /** HMAC key of the secret digests in status. */
  digestKey: string;
  informer?: {
    idleMs?: number;
    relistMs?: number;
    watchTimeoutSeconds?: number;
    minBackoffMs?: number;
    maxBackoffMs?: number;
  };
}
