// `edgectl drain`: take every edge.tunnel.dev object of an installation out of the cluster's
// hands before the operator goes (uninstall), so nothing is left hanging on a finalizer that
// no operator will ever remove.
//   Orphan: objects and remote resources stay; the finalizers go (the objects are no longer
//           managed; deleting one later is instant and leaves its remote resource). Run it
//           once the operator is stopped, or the operator puts the finalizers back:
//           `stopDeployment` first scales the operator's Deployment to 0 and waits until none
//           of its pods is left (the Helm pre-delete hook does that).
//   Retain: objects are deleted, remote resources stay (no operator needed).
//   Delete: objects are deleted and the running operator deletes each remote resource;
//           waits for it, up to the timeout.
// With `stopDeployment` (any policy: Orphan and Retain before the objects, Delete after the
// operator has deleted them), the accounts' finalizers go too once the operator is stopped:
// every EdgeAccount and ClusterEdgeAccount carries one while an operator runs, and with none
// left a namespace or account deleted later would wait for it forever.
import { ACCOUNT_KINDS, accountResource } from './kinds/accounts.ts';
import { BINDINGS } from './kinds/index.ts';
import { accountId, INSTALLATION } from './runtime/accounts/resolve.ts';
import { FINALIZER, INSTANCE_LABEL, managedResource as resourceOf } from './runtime/constants.ts';
import {
  isConflict,
  isKubeNotFound,
  type Kube,
  type KubeObject,
  type ResourcePath,
  resourceUrl,
  whileTransient,
} from './runtime/kube/kube.ts';

export const DRAIN_POLICIES = ['Orphan', 'Retain', 'Delete'] as const;
export type DrainPolicy = (typeof DRAIN_POLICIES)[number];

export interface DrainOptions {
  policy: DrainPolicy;
  /** Namespaces to drain; empty: all. */
  namespaces?: string[];
  /** The installation's instance label value; undefined: objects without the label. */
  instance?: string;
  /**
   * Only the objects of this account, as status.account names it (`installation`,
   * `EdgeAccount/<ns>/<name>`, `ClusterEdgeAccount/<name>`): one team's account goes, the others stay.
   */
  account?: string;
  /**
   * Delete: how long to wait for the operator. With stopDeployment: how long to wait for its
   * pods to be gone. Any policy: how long an API server out of reach is tried again. Default 5 min.
   */
  timeoutMs?: number;
  /**
   * Scale this Deployment (the operator's) to 0 replicas and wait until none of its pods is
   * left, so no operator puts a finalizer back: Orphan and Retain before anything else, Delete
   * once the operator has deleted the objects. Then the accounts' finalizers are removed too.
   * Needs get and patch on its deployments/scale and list on pods in its namespace.
   */
  stopDeployment?: { namespace: string; name: string };
  /** How often to look again (pods gone, objects gone, finalizers back). Default 2 s. */
  pollMs?: number;
  progress?: (line: string) => void;
}

export interface DrainResult {
  /** Objects handled, by kind. */
  handled: Record<string, number>;
  /**
   * Delete: objects still there when the timeout passed. Orphan: objects that have the
   * finalizer again (an operator still runs). As "Kind namespace/name".
   */
  left: string[];
  /** Accounts whose finalizer was removed (the operator stopped), as "Kind namespace/name". */
  accounts: string[];
}

/**
 * The account an object's remote resource is in (status.account; made before accounts: the
 * installation's), else the one its spec names; undefined for an object with neither.
 */
export function accountOfObject(obj: KubeObject): string | undefined {
  const st = obj.status as { id?: string; account?: string } | undefined;
  if (st?.account) return st.account;
  if (st?.id) return INSTALLATION;
  const ref = (obj.spec as { accountRef?: { kind: 'EdgeAccount' | 'ClusterEdgeAccount'; name: string } })
    ?.accountRef;
  return ref && accountId(ref.kind, obj.metadata.namespace, ref.name);
}

const DEPLOYMENTS: ResourcePath = { group: 'apps', version: 'v1', plural: 'deployments' };
const PODS: ResourcePath = { group: '', version: 'v1', plural: 'pods' };

/** "namespace/name", as --stop-deployment takes it. */
export function parseDeploymentRef(s: string): { namespace: string; name: string } | undefined {
  const m = /^([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\/([a-z0-9](?:[-.a-z0-9]*[a-z0-9])?)$/.exec(s);
  return m ? { namespace: m[1]!, name: m[2]! } : undefined;
}

/**
 * Scales the Deployment to 0 through its scale subresource (whose status.selector says which
 * pods are its own) and waits until none of those pods is left, terminating ones included.
 * A Deployment that is not there has no operator to stop.
 */
export async function stopDeployment(
  kube: Kube,
  d: { namespace: string; name: string },
  o: { timeoutMs: number; pollMs: number; progress?: (line: string) => void },
): Promise<void> {
  const retry = retrying(o.progress, Date.now() + o.timeoutMs);
  const path = resourceUrl(DEPLOYMENTS, d.namespace, d.name, 'scale');
  let scale: { spec?: { replicas?: number }; status?: { selector?: string } };
  try {
    scale = await retry('get the scale', () => kube.request('GET', path));
  } catch (err) {
    if (!isKubeNotFound(err)) throw err;
    o.progress?.(`deployment ${d.namespace}/${d.name} not found: no operator to stop`);
    return;
  }
  const selector = scale.status?.selector;
  if (!selector) throw new Error(`deployment ${d.namespace}/${d.name} has no pod selector`);
  if (scale.spec?.replicas !== 0) {
    await retry('scale to 0', () =>
      kube.patch(DEPLOYMENTS, d.namespace, d.name, { spec: { replicas: 0 } }, 'merge', 'scale'),
    );
    o.progress?.(`scaled deployment ${d.namespace}/${d.name} to 0 (was ${scale.spec?.replicas ?? 1})`);
  }
  const deadline = Date.now() + o.timeoutMs;
  for (;;) {
    const pods = (await retry('list pods', () => kube.list(PODS, d.namespace, { labelSelector: selector })))
      .items;
    if (!pods.length) return;
    const names = pods.map((p) => p.metadata.name).join(', ');
    if (Date.now() > deadline)
      throw new Error(
        `deployment ${d.namespace}/${d.name}: ${pods.length} pods still there after ${Math.round(o.timeoutMs / 1000)}s: ${names}`,
      );
    o.progress?.(`waiting for ${pods.length} operator pods to be gone: ${names}`);
    await new Promise((r) => setTimeout(r, o.pollMs));
  }
}

/**
 * Calls the API server retried while it is unreachable, overloaded or its cache is (re)initializing
 * (429): a hook Job should not fail on what a moment later succeeds.
 */
const retrying =
  (progress: ((line: string) => void) | undefined, until: number) =>
  <T>(what: string, fn: () => Promise<T>) =>
    whileTransient(what, fn, (w, err) => progress?.(`${w}: ${err.message}; retrying`), { until });

export async function drain(kube: Kube, o: DrainOptions): Promise<DrainResult> {
  const timeoutMs = o.timeoutMs ?? 5 * 60_000;
  const pollMs = o.pollMs ?? 2000;
  // an API server out of reach for the whole timeout: given up, with its last error
  const retry = retrying(o.progress, Date.now() + timeoutMs);
  const stop = () =>
    o.stopDeployment
      ? stopDeployment(kube, o.stopDeployment, { timeoutMs, pollMs, progress: o.progress })
      : Promise.resolve();
  // Delete needs the operator running until the objects are gone
  if (o.policy !== 'Delete') await stop();
  const labelSelector = o.instance ? `${INSTANCE_LABEL}=${o.instance}` : `!${INSTANCE_LABEL}`;
  const namespaces = o.namespaces?.length ? o.namespaces : [undefined];
  const objects = async () => {
    const out: { plural: string; kind: string; obj: KubeObject }[] = [];
    for (const b of BINDINGS)
      for (const ns of namespaces)
        for (const obj of (
          await retry(`list ${b.plural}`, () => kube.list(resourceOf(b.plural), ns, { labelSelector }))
        ).items)
          if (!o.account || accountOfObject(obj) === o.account)
            out.push({ plural: b.plural, kind: b.kind, obj });
    return out;
  };
  /** Our finalizer off, guarded by resourceVersion (another finalizer added meanwhile stays). */
  const withoutFinalizer = async (plural: string, ns: string | undefined, name: string) => {
    for (let attempt = 0; ; attempt++) {
      const obj = await retry(`get ${plural}`, () => kube.get(resourceOf(plural), ns, name));
      const finalizers = obj.metadata.finalizers;
      if (!finalizers?.includes(FINALIZER)) return;
      try {
        await retry(`patch ${plural}`, () =>
          kube.patch(resourceOf(plural), ns, name, {
            metadata: {
              finalizers: finalizers.filter((f) => f !== FINALIZER),
              resourceVersion: obj.metadata.resourceVersion,
            },
          }),
        );
        return;
      } catch (err) {
        if (!isConflict(err) || attempt >= 5) throw err;
      }
    }
  };
  const handled: Record<string, number> = {};
  for (const { plural, kind, obj } of await objects()) {
    const ns = obj.metadata.namespace;
    const name = obj.metadata.name;
    // a running operator finalizing meanwhile must leave the remote resource too
    if (o.policy === 'Retain')
      await retry(`patch ${plural}`, () =>
        kube.patch(resourceOf(plural), ns, name, { spec: { deletionPolicy: 'Retain' } }),
      ).catch(gone);
    if (o.policy !== 'Orphan')
      await retry(`delete ${plural}`, () => kube.delete(resourceOf(plural), ns, name)).catch(gone);
    // Orphan and Retain need no operator: the remote resource stays, the finalizer goes
    if (o.policy !== 'Delete') await withoutFinalizer(plural, ns, name).catch(gone);
    handled[kind] = (handled[kind] ?? 0) + 1;
  }
  o.progress?.(
    `${o.policy}: ${
      Object.entries(handled)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ') || 'no objects'
    }`,
  );
  const named = (x: { kind: string; obj: KubeObject }) =>
    `${x.kind} ${x.obj.metadata.namespace}/${x.obj.metadata.name}`;
  /** The accounts' finalizers, once no operator runs to put them back and no object is left on one. */
  const released = async (left: string[]): Promise<DrainResult> => {
    if (!o.stopDeployment || left.length) return { handled, left, accounts: [] };
    const accounts: string[] = [];
    for (const kind of ACCOUNT_KINDS)
      for (const ns of kind === 'EdgeAccount' ? namespaces : [undefined])
        for (const a of (
          await retry(`list ${kind}`, () => kube.list(accountResource(kind), ns, { labelSelector }))
        ).items) {
          const id = accountId(kind, a.metadata.namespace, a.metadata.name);
          if ((o.account && o.account !== id) || !a.metadata.finalizers?.includes(FINALIZER)) continue;
          await withoutFinalizer(accountResource(kind).plural, a.metadata.namespace, a.metadata.name).catch(
            gone,
          );
          accounts.push(
            `${kind} ${a.metadata.namespace ? `${a.metadata.namespace}/` : ''}${a.metadata.name}`,
          );
        }
    if (accounts.length) o.progress?.(`released ${accounts.length} accounts: ${accounts.join(', ')}`);
    return { handled, left, accounts };
  };
  if (o.policy === 'Retain') return released([]);
  if (o.policy === 'Orphan') {
    if (!Object.keys(handled).length) return released([]);
    // a running operator puts a removed finalizer back at once (FinalizerRestored): look again
    await new Promise((r) => setTimeout(r, pollMs));
    const left = (await objects()).filter((x) => x.obj.metadata.finalizers?.includes(FINALIZER)).map(named);
    return released(left);
  }
  // the operator finalizes: each remote resource deleted, then the finalizer removed
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = (await objects()).map(named);
    if (!left.length) {
      await stop();
      return released(left);
    }
    if (Date.now() > deadline) return { handled, left, accounts: [] };
    o.progress?.(`waiting for the operator to delete ${left.length} remote resources`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** Gone in the meantime: nothing left to do for it. */
const gone = (err: unknown) => {
  if (!isKubeNotFound(err)) throw err;
};
