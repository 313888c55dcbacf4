// Look-ups in the informer caches for the engines: any managed object by kind and name, the
// object behind a remote id, whether an owner still exists, and each kind's view (EngineCache).

import { isResourceId } from '../../../api/limits.ts';
import type { AnyBinding } from '../bindings/binding.ts';
import { managedResource } from '../constants.ts';
import { type Informer, keyAt } from '../kube/informer.ts';
import { isKubeNotFound, type Kube, type KubeObject } from '../kube/kube.ts';
import type { SecretStore } from '../kube/secrets.ts';
import type { EngineCache } from './cache-view.ts';
import { type References, refOf } from './references.ts';

interface Named {
  kind: string;
  namespace: string;
  name: string;
}

/** What a message says in place of an id the reader may not learn. */
export const UNNAMED = 'another resource of the account';
export class ObjectCache {
  private readonly kinds = new Map<string, { binding: AnyBinding; informers: Informer[] }>();
  /**
   * Remote id -> the managed object whose status holds it: one, unless someone wrote status
   * (then all of them). One object, not a list of one, per id: thousands of ids.
   */
  private readonly byId = new Map<string, Named | Named[]>();
  private holders(id: string): Named[] {
    const h = this.byId.get(id);
    return h === undefined ? [] : Array.isArray(h) ? h : [h];
  }
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

  /** Object keys changed since a kind's engine last asked, for the kinds that ask (conflicts). */
  private readonly changed = new Map<string, Set<string>>();

  /**
   * Keeps the index of remote ids (and the changed keys) current with an informer event. An id
   * may have more than one holder (a `status.id` someone wrote, which its reconcile refuses as
   * OwnedElsewhere): each is kept, so that one letting go does not erase another.
   */
  noteIds(kind: string, type: 'add' | 'update' | 'delete', obj: KubeObject, old?: KubeObject): void {
    this.changed.get(kind)?.add(keyAt(obj.metadata.namespace, obj.metadata.name));
    const id = (obj.status as { id?: string } | undefined)?.id;
    const oldId = (old?.status as { id?: string } | undefined)?.id;
    const namespace = obj.metadata.namespace ?? '';
    const name = obj.metadata.name;
    const other = (o: Named) => o.kind !== kind || o.namespace !== namespace || o.name !== name;
    const keep = (x: string, left: Named[]) => {
      if (left.length > 1) this.byId.set(x, left);
      else if (left.length) this.byId.set(x, left[0]!);
      else this.byId.delete(x);
    };
    if (oldId && oldId !== id) keep(oldId, this.holders(oldId).filter(other));
    if (id && type === 'delete') keep(id, this.holders(id).filter(other));
    else if (id) {
      const had = this.holders(id);
      // most events of an object with an id leave it as it was: nothing to make
      if (had.length === 1 && !other(had[0]!)) return;
      keep(id, [...had.filter(other), { kind, namespace, name }]);
    }
  }

  /**
   * The text with each remote id that one of the managed objects holds followed by that
   * object (`ipx_123 (IPRestriction team/dash)`): the API's messages name remote resources only.
   * An id no object the asking namespace may see holds, and that the asking object did not name
   * itself (`known`), becomes "another resource of the account": the API's messages may name
   * what a tenant has no business learning (the platform's restriction it collides with).
   */
  nameIds = (text: string, namespace: string, known?: ReadonlySet<string>): string =>
    text.replace(/\b[a-z]+_[A-Za-z0-9]{8,}\b/g, (id) => {
      // a field name (`tls_termination`) is no id
      if (!isResourceId(id)) return id;
      // only objects the asking namespace may see: another tenant's object names stay unsaid
      const o = this.holders(id).find(
        (x) => x.namespace === namespace || this.opts.sharedNamespaces?.includes(x.namespace),
      );
      if (o) return `${id} (${o.kind} ${o.namespace}/${o.name})`;
      return known?.has(id) ? id : UNNAMED;
    });

  /**
   * Whether the object an owner marker names exists: from the caches, else read from the API
   * server (another installation's or an unwatched namespace's object is not cached here).
   * In the asking object's own namespace (or a shared one) any object of that name counts as
   * the owner: a restore of it may take its resource back. In another tenant's namespace only
   * the object with the marker's uid counts, so a marker someone wrote by hand cannot tell
   * them whether a name exists there (the uid is not theirs to know).
   */
  ownerState = async (object: string, uid: string, asking: string): Promise<'live' | 'gone' | 'unknown'> => {
    const [kind, ns, name] = object.split('/');
    const k = kind ? this.kinds.get(kind) : undefined;
    if (!k || !ns || !name) return 'unknown';
    const anyOfName = ns === asking || !!this.opts.sharedNamespaces?.includes(ns);
    const owns = (o: KubeObject) => (anyOfName || o.metadata.uid === uid ? 'live' : 'gone');
    const cached = this.lookup(kind!, ns, name);
    if (cached) return owns(cached);
    try {
      return owns(await this.opts.kube.get(managedResource(k.binding.plural), ns, name));
    } catch (err) {
      return isKubeNotFound(err) ? 'gone' : 'unknown';
    }
  };

  /**
   * The ids this process's own syncs took as their objects' (`Kind/ns/name` -> id): status is
   * writable by whoever may write status, so an id another object reads from it (a reference,
   * a raw id's holder) counts only once a sync here has checked it against the owner marker.
   */
  private readonly confirmed = new Map<string, string>();
  confirm = (kind: string, key: string, id: string | undefined): void => {
    if (id === undefined) this.confirmed.delete(`${kind}/${key}`);
    else this.confirmed.set(`${kind}/${key}`, id);
  };
  confirmedId = (kind: string, namespace: string, name: string): string | undefined =>
    this.confirmed.get(`${kind}/${keyAt(namespace, name)}`);

  /** An object in another namespace managing this id, unless that namespace is shared. */
  managedElsewhere = (id: string, ns: string): Named | undefined =>
    this.holders(id).find((o) => o.namespace !== ns && !this.opts.sharedNamespaces?.includes(o.namespace));

  /** The object whose status holds this remote id, in any namespace. */
  managerOf = (id: string): Named | undefined => this.holders(id)[0];

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
      changes: () => {
        const keys = this.changed.get(kind);
        if (!keys) {
          this.changed.set(kind, new Set());
          return undefined;
        }
        const out = [...keys];
        keys.clear();
        return out;
      },
      managedElsewhere: this.managedElsewhere,
      managerOf: this.managerOf,
      confirm: (key, id) => this.confirm(kind, key, id),
      confirmedId: this.confirmedId,
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
