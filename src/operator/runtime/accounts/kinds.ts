// The account kinds as the runtime knows them: their names, resources and the fields it reads.
// The CRDs (schemas, rules, descriptions) are the kinds' (src/operator/kinds/accounts.ts), which
// check against these shapes; the runtime knows no kind's schema.
import { GROUP, VERSION } from '../constants.ts';

export const ACCOUNT_KINDS = ['EdgeAccount', 'ClusterEdgeAccount'] as const;
export type AccountKind = (typeof ACCOUNT_KINDS)[number];

/** Each account kind's resource and scope, for the informers and the RBAC check at start. */
export const ACCOUNT_RESOURCES: { kind: AccountKind; plural: string; scope: 'Namespaced' | 'Cluster' }[] = [
  { kind: 'EdgeAccount', plural: 'edgeaccounts', scope: 'Namespaced' },
  { kind: 'ClusterEdgeAccount', plural: 'clusteredgeaccounts', scope: 'Cluster' },
];

export const accountResource = (kind: AccountKind) => ({
  group: GROUP,
  version: VERSION,
  plural: ACCOUNT_RESOURCES.find((a) => a.kind === kind)!.plural,
});

/** `spec.accountRef` of a managed object. */
export interface AccountRef {
  kind: AccountKind;
  name: string;
}

/** A Kubernetes label selector on namespaces. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: {
    key: string;
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    values?: string[];
  }[];
}

/** What the runtime reads of an account's spec (a ClusterEdgeAccount's; an EdgeAccount's is a subset). */
export interface AccountSpec {
  apiKeySecretRef: { name: string; key: string; namespace?: string };
  apiURL?: string;
  rateLimitPerMinute?: number;
  namespaces?: string[];
  namespaceSelector?: LabelSelector;
  adoptFrom?: string[];
}

/** What the account reconciler writes into an account's status (conditions besides). */
export interface AccountStatusFields {
  observedGeneration?: number;
  url?: string;
  objects?: { count: number; names?: string[] };
  lastMinute?: { requests: number; throttled: number };
}
