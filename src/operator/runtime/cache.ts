// Look-ups in the informer caches for the engines: any managed object by kind and name, the
// object behind a remote id, whether an owner still exists, and each kind's view (EngineCache).
import type { AnyBinding } from './binding.ts';
import { managedResource } from './constants.ts';
import type { EngineCache } from './engine.ts';
import { type Informer, keyAt } from './informer.ts';
import { isKubeNotFound, type Kube, type KubeObject } from './kube.ts';
import { type References, refOf } from './references.ts';
import type { SecretStore } from './secrets.ts';

interface Named {
  kind: string;
  namespace: string;
  name: string;
}

export class ObjectCache {
  private readonly kinds = new Map<string, { binding: AnyBinding; informers: Informer[] }>();
  /** Remote id -> the managed object whose status holds it. */
  private readonly byId = new Map<string, Named>();
  private readonly opts: {
    kube: Pick<Kube, 'get'>;
    references: References;
    /** Namespaces whose objects' remote resources any namespace may reference by id. */
    sharedNamespaces?: string[];
    secrets: () => SecretStore | undefined;
  };

  constructor(o: ObjectCache['opts']) {
    this.opts = o;
  }

  addKind(binding: AnyBinding, informers: Informer[]): void {
    this.kinds.set(binding.kind, { binding, informers });
  }

  lookup = (kind: string, namespace: string, name: string): KubeObject | undefined => {
    if (kind === 'Secret') return this.opts.secrets()?.meta(namespace, name);
    for (const inf of this.kinds.get(kind)?.informers ?? []) {
      const o = inf.get(keyAt(namespace, name));
      if (o) return o;
    }
    return undefined;
  };

  /** Keeps the index of remote ids current with an informer event. */
  noteIds(kind: string, type: 'add' | 'update' | 'delete', obj: KubeObject, old?: KubeObject): void {
    const id = (obj.status as { id?: string } | undefined)?.id;
    const oldId = (old?.status as { id?: string } | undefined)?.id;
    if (oldId && oldId !== id) this.byId.delete(oldId);
    if (id && type === 'delete') this.byId.delete(id);
    else if (id)
      this.byId.set(id, { kind, namespace: obj.metadata.namespace ?? '', name: obj.metadata.name });
  }

  /**
   * The text with each remote id that one of the managed objects holds followed by that
   * object (`ipx_123 (IPRestriction team/dash)`): the API's messages name remote resources only.
   */
  nameIds = (text: string): string =>
    text.replace(/\b[a-z]+_[A-Za-z0-9]{8,}\b/g, (id) => {
      const o = this.byId.get(id);
      return o ? `${id} (${o.kind} ${o.namespace}/${o.name})` : id;
    });

  /**
   * Whether the object an owner marker names exists: from the caches, else read from the API
   * server (another installation's or an unwatched namespace's object is not cached here).
   * Any object of that name counts as the owner (a restore of it may take its resource back).
   */
  ownerState = async (object: string, _uid: string): Promise<'live' | 'gone' | 'unknown'> => {
    const [kind, ns, name] = object.split('/');
    const k = kind ? this.kinds.get(kind) : undefined;
    if (!k || !ns || !name) return 'unknown';
    if (this.lookup(kind!, ns, name)) return 'live';
    try {
      await this.opts.kube.get(managedResource(k.binding.plural), ns, name);
      return 'live';
    } catch (err) {
      return isKubeNotFound(err) ? 'gone' : 'unknown';
    }
  };

  /** The object in another namespace managing this id, unless that namespace is shared. */
  managedElsewhere = (id: string, ns: string): Named | undefined => {
    const o = this.byId.get(id);
    return o && o.namespace !== ns && !this.opts.sharedNamespaces?.includes(o.namespace) ? o : undefined;
  };

  /** The object whose status holds this remote id, in any namespace. */
  managerOf = (id: string): Named | undefined => this.byId.get(id);

  /** What one kind's engine reads. */
  view(kind: string): EngineCache {
    const informers = this.kinds.get(kind)?.informers ?? [];
    return {
      lookup: this.lookup,
      nameIds: this.nameIds,
      referencesOf: (k, spec) => this.kinds.get(k)?.binding.references?.(spec),
      referrersOf: (k, ns, name) => this.opts.references.referrersOf(refOf(k, ns, name)),
      ownerState: this.ownerState,
      list: () => informers.flatMap((i) => i.list()),
      managedElsewhere: this.managedElsewhere,
      managerOf: this.managerOf,
      get: (key) => {
        for (const i of informers) {
          const o = i.get(key);
          if (o) return o;
        }
        return undefined;
      },
    };
  }
}
