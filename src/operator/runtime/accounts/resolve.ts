// Which account an object uses, decided from the caches alone (no API request): its
// accountRef, else its namespace's EdgeAccount named default, else the installation's own.
// Pure functions, tested by tables (test/unit/accounts.test.ts).
import type { AccountKind, AccountRef, LabelSelector } from './kinds.ts';

/** The installation's own account (the operator's flags and Secret). */
export const INSTALLATION = 'installation';

import { DEFAULT_ACCOUNT_NAME } from '../constants.ts';

export { DEFAULT_ACCOUNT_NAME };

/** An account's identity: `installation`, `EdgeAccount/<ns>/<name>` or `ClusterEdgeAccount/<name>`. */
export const accountId = (kind: AccountKind, namespace: string | undefined, name: string): string =>
  kind === 'EdgeAccount' ? `EdgeAccount/${namespace}/${name}` : `ClusterEdgeAccount/${name}`;

/**
 * The turn an account's work takes in the account queue: an EdgeAccount its namespace's (a
 * tenant's many accounts share one), a cluster account or the installation's its own.
 */
export const accountFlow = (id: string): string =>
  id.startsWith('EdgeAccount/') ? `namespace ${id.split('/')[1]}` : id;

/** An account's identity as the reverse index of references knows it (`Kind/namespace/name`). */
export const accountRefKey = (id: string): string | undefined =>
  id.startsWith('EdgeAccount/')
    ? id
    : id.startsWith('ClusterEdgeAccount/')
      ? id.replace('/', '//')
      : undefined;

/** The account named for people: "EdgeAccount team/default", "ClusterEdgeAccount shared", "the installation's account". */
export function describeAccount(id: string): string {
  if (id === INSTALLATION) return "the installation's account";
  const [kind, a, b] = id.split('/');
  return b === undefined ? `${kind} ${a}` : `${kind} ${a}/${b}`;
}

/**
 * The metrics label of an account: its identity (kind, namespace and name: every team's
 * EdgeAccount is called `default`), bounded by the account objects that exist.
 */
export const accountLabel = (id: string): string => id;

/** What resolution reads: the account objects in the caches and the namespaces' labels. */
export interface AccountFacts {
  installationEnabled: boolean;
  edgeAccountExists(namespace: string, name: string): boolean;
  clusterAccount(
    name: string,
  ): { namespaces?: string[]; namespaceSelector?: LabelSelector; adoptFrom?: string[] } | undefined;
  namespaceLabels(namespace: string): Record<string, string> | undefined;
  /** The namespaces that may adopt in the installation's account (`*`: every one). */
  installationAdoptFrom: string[];
  /** The operator's own namespace: the platform's, which may adopt in the accounts it shares. */
  operatorNamespace: string;
}

export type Resolution =
  | { ok: true; id: string }
  | { ok: false; state: 'stalled' | 'progressing'; reason: string; message: string };

/** Whether a label selector matches these labels (Kubernetes' semantics; an empty selector matches all). */
export function selects(sel: LabelSelector, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const inValues = has && (e.values ?? []).includes(labels[e.key]!);
    if (e.operator === 'In' && !inValues) return false;
    if (e.operator === 'NotIn' && inValues) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

/** A selector with no term: Kubernetes' "everything", which admission refuses for an account. */
export const emptySelector = (sel: LabelSelector): boolean =>
  !Object.keys(sel.matchLabels ?? {}).length && !(sel.matchExpressions ?? []).length;

/**
 * Whether a ClusterEdgeAccount admits a namespace: named, or selected by label; with neither,
 * none. An empty selector (one stored before admission refused it) admits none, not all.
 */
export function admits(
  account: { namespaces?: string[]; namespaceSelector?: LabelSelector },
  namespace: string,
  labels: Record<string, string> | undefined,
): boolean {
  if (account.namespaces?.includes(namespace)) return true;
  const sel = account.namespaceSelector;
  return !!sel && !emptySelector(sel) && !!labels && selects(sel, labels);
}

/** The account an object of `namespace` with this accountRef uses now, or why none. */
export function resolveAccount(
  namespace: string,
  ref: AccountRef | undefined,
  facts: AccountFacts,
): Resolution {
  if (ref?.kind === 'EdgeAccount') {
    if (!facts.edgeAccountExists(namespace, ref.name))
      return {
        ok: false,
        state: 'progressing',
        reason: 'WaitingForAccount',
        message: `spec.accountRef: EdgeAccount ${ref.name} not found in namespace ${namespace}`,
      };
    return { ok: true, id: accountId('EdgeAccount', namespace, ref.name) };
  }
  if (ref?.kind === 'ClusterEdgeAccount') {
    const account = facts.clusterAccount(ref.name);
    if (!account)
      return {
        ok: false,
        state: 'progressing',
        reason: 'WaitingForAccount',
        message: `spec.accountRef: ClusterEdgeAccount ${ref.name} not found`,
      };
    if (!admits(account, namespace, facts.namespaceLabels(namespace)))
      return {
        ok: false,
        state: 'stalled',
        reason: 'AccountNotAllowed',
        message: `spec.accountRef: ClusterEdgeAccount ${ref.name} does not admit namespace ${namespace} (its spec.namespaces and spec.namespaceSelector name the namespaces that may use it)`,
      };
    return { ok: true, id: accountId('ClusterEdgeAccount', undefined, ref.name) };
  }
  if (facts.edgeAccountExists(namespace, DEFAULT_ACCOUNT_NAME))
    return { ok: true, id: accountId('EdgeAccount', namespace, DEFAULT_ACCOUNT_NAME) };
  if (facts.installationEnabled) return { ok: true, id: INSTALLATION };
  return {
    ok: false,
    state: 'stalled',
    reason: 'NoAccount',
    message: `no account: set spec.accountRef, or create an EdgeAccount named ${DEFAULT_ACCOUNT_NAME} in namespace ${namespace} (the installation's own account is turned off)`,
  };
}

/**
 * Whether objects of `namespace` may use account `id` at all: the installation's when it is on,
 * their own namespace's EdgeAccounts, a ClusterEdgeAccount that admits the namespace. What
 * status.account names is checked against it: status is writable by whoever may write status.
 */
export function mayUse(id: string, namespace: string, facts: AccountFacts): boolean {
  if (id === INSTALLATION) return facts.installationEnabled;
  const [kind, a, b] = id.split('/');
  if (kind === 'EdgeAccount') return a === namespace && b !== undefined && facts.edgeAccountExists(a, b);
  if (kind !== 'ClusterEdgeAccount' || !a) return false;
  const account = facts.clusterAccount(a);
  return !!account && admits(account, namespace, facts.namespaceLabels(namespace));
}

/**
 * Whether an object's status may name account `id` as the one holding its resource: one its
 * namespace may use, or the ClusterEdgeAccount its spec.accountRef names (after that account
 * stops admitting the namespace, the object's delete still goes there; the delete guard keeps
 * it to the object's own resource). Anything else was not written by the operator.
 */
export function mayHold(
  id: string,
  namespace: string,
  ref: AccountRef | undefined,
  facts: AccountFacts,
): boolean {
  if (mayUse(id, namespace, facts)) return true;
  return (
    ref?.kind === 'ClusterEdgeAccount' &&
    id === `ClusterEdgeAccount/${ref.name}` &&
    !!facts.clusterAccount(ref.name)
  );
}

/**
 * Whether objects of `namespace` may adopt, observe or reference by raw id the resources of
 * account `id` that no object of theirs made (made outside the cluster, by another namespace,
 * or by another installation). A shared account is one trust domain: only the namespaces it
 * names may reach what it holds besides their own. An EdgeAccount serves its own namespace,
 * which holds its key: everything in it is that namespace's already.
 */
export function mayAdopt(id: string, namespace: string, facts: AccountFacts): boolean {
  if (id.startsWith('EdgeAccount/')) return id.startsWith(`EdgeAccount/${namespace}/`);
  const listed =
    id === INSTALLATION
      ? facts.installationAdoptFrom
      : (facts.clusterAccount(id.slice('ClusterEdgeAccount/'.length))?.adoptFrom ?? []);
  if (listed.includes('*') || listed.includes(namespace)) return true;
  // the platform's own namespace, unless the installation's list names others
  return namespace === facts.operatorNamespace && (id !== INSTALLATION || !listed.length);
}

/** What an object records: the account holding its remote resource, once it has one. */
interface Recorded {
  id?: string;
  account?: string;
}

/**
 * The account an object works with: the one holding its remote resource when it has one
 * (objects made before accounts existed: the installation's), else the one it resolves to.
 * A remote resource is never looked for in another account: there its id answers 404, which
 * must not read as "deleted".
 */
export function effectiveAccount(
  recorded: Recorded,
  resolved: Resolution,
  usable: (id: string) => boolean = () => true,
): Resolution {
  if (!recorded.id) return resolved;
  const held = recorded.account ?? INSTALLATION;
  // an account this namespace may not use never held its resource: the status is not the operator's
  if (!usable(held)) return resolved;
  if (!resolved.ok || resolved.id === held) return resolved.ok ? resolved : resolved;
  return {
    ok: false,
    state: 'stalled',
    reason: 'AccountChanged',
    message: `${recorded.id} is in ${describeAccount(held)}, but the object now resolves to ${describeAccount(resolved.id)}: a resource does not move between accounts (remove what changed the resolution, or delete and re-create the object)`,
  };
}

/**
 * The account that holds an object's remote resource, for a delete (no resolution needed).
 * `status.account` is writable by whoever may write status: an account the namespace may not
 * use (another namespace's EdgeAccount, a ClusterEdgeAccount that does not admit it) is never
 * this object's, so the delete resolves the account as any reconcile does.
 */
export function holdingAccount(
  recorded: Recorded,
  namespace: string,
  usable: (id: string) => boolean = (id) =>
    !id.startsWith('EdgeAccount/') || id.startsWith(`EdgeAccount/${namespace}/`),
): string | undefined {
  if (!recorded.id) return undefined;
  const held = recorded.account ?? INSTALLATION;
  return usable(held) ? held : undefined;
}

/**
 * The status field that names an account the object's namespace may not use (written by
 * someone else than the operator), or undefined.
 */
export function forgedAccount(recorded: Recorded, usable: (id: string) => boolean): string | undefined {
  return recorded.account && !usable(recorded.account) ? recorded.account : undefined;
}

/** A URL as compared with the allow-list: its origin and path, without a trailing slash. */
export function normalizeUrl(url: string): string | undefined {
  try {
    const u = new URL(url);
    if (!/^https?:$/.test(u.protocol) || u.username || u.password || u.search || u.hash) return undefined;
    return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    return undefined;
  }
}

/**
 * Whether an account may send its requests (and its key) to this URL: the installation's own,
 * or one the installation allows (--account-api-urls). A tenant never picks an address of its
 * own choosing.
 */
export function urlAllowed(url: string, installationUrl: string | undefined, allowed: string[]): boolean {
  const u = normalizeUrl(url);
  if (!u) return false;
  return [installationUrl, ...allowed].some((a) => a !== undefined && normalizeUrl(a) === u);
}
