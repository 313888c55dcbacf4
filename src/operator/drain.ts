// `edgectl drain`: take every edge.tunnel.dev object of an installation out of the cluster's
// hands before the operator goes (uninstall), so nothing is left hanging on a finalizer that
// no operator will ever remove.
//   Orphan: objects and remote resources stay; the finalizers go (the objects are no longer
//           managed; deleting one later is instant and leaves its remote resource). Run it
//           once the operator is stopped, or the operator puts the finalizers back.
//   Retain: objects are deleted, remote resources stay (no operator needed).
//   Delete: objects are deleted and the running operator deletes each remote resource;
//           waits for it, up to the timeout.
import { BINDINGS } from './kinds/index.ts';
import { FINALIZER, INSTANCE_LABEL, managedResource as resourceOf } from './runtime/constants.ts';
import { isConflict, isKubeNotFound, type Kube, type KubeObject } from './runtime/kube.ts';

export const DRAIN_POLICIES = ['Orphan', 'Retain', 'Delete'] as const;
export type DrainPolicy = (typeof DRAIN_POLICIES)[number];

export interface DrainOptions {
  policy: DrainPolicy;
  /** Namespaces to drain; empty: all. */
  namespaces?: string[];
  /** The installation's instance label value; undefined: objects without the label. */
  instance?: string;
  timeoutMs?: number;
  progress?: (line: string) => void;
}

export interface DrainResult {
  /** Objects handled, by kind. */
  handled: Record<string, number>;
  /** Objects still there when the timeout passed (Delete), as "Kind namespace/name". */
  left: string[];
}

export async function drain(kube: Kube, o: DrainOptions): Promise<DrainResult> {
  const labelSelector = o.instance ? `${INSTANCE_LABEL}=${o.instance}` : `!${INSTANCE_LABEL}`;
  const namespaces = o.namespaces?.length ? o.namespaces : [undefined];
  const objects = async () => {
    const out: { plural: string; kind: string; obj: KubeObject }[] = [];
    for (const b of BINDINGS)
      for (const ns of namespaces)
        for (const obj of (await kube.list(resourceOf(b.plural), ns, { labelSelector })).items)
          out.push({ plural: b.plural, kind: b.kind, obj });
    return out;
  };
  /** Our finalizer off, guarded by resourceVersion (another finalizer added meanwhile stays). */
  const withoutFinalizer = async (plural: string, ns: string | undefined, name: string) => {
    for (let attempt = 0; ; attempt++) {
      const obj = await kube.get(resourceOf(plural), ns, name);
      if (!obj.metadata.finalizers?.includes(FINALIZER)) return;
      try {
        await kube.patch(resourceOf(plural), ns, name, {
          metadata: {
            finalizers: obj.metadata.finalizers.filter((f) => f !== FINALIZER),
            resourceVersion: obj.metadata.resourceVersion,
          },
        });
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
      await kube.patch(resourceOf(plural), ns, name, { spec: { deletionPolicy: 'Retain' } }).catch(gone);
    if (o.policy !== 'Orphan') await kube.delete(resourceOf(plural), ns, name).catch(gone);
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
  if (o.policy !== 'Delete') return { handled, left: [] };
  // the operator finalizes: each remote resource deleted, then the finalizer removed
  const deadline = Date.now() + (o.timeoutMs ?? 5 * 60_000);
  for (;;) {
    const left = (await objects()).map((x) => `${x.kind} ${x.obj.metadata.namespace}/${x.obj.metadata.name}`);
    if (!left.length || Date.now() > deadline) return { handled, left };
    o.progress?.(`waiting for the operator to delete ${left.length} remote resources`);
    await new Promise((r) => setTimeout(r, 2000));
  }
}

/** Gone in the meantime: nothing left to do for it. */
const gone = (err: unknown) => {
  if (!isKubeNotFound(err)) throw err;
};
