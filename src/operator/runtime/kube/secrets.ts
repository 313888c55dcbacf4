// Secrets the objects reference, and nothing else. A metadata-only watch (no data crosses
// the wire, annotations dropped: `kubectl apply` keeps a Secret's whole content in its
// last-applied annotation) says which Secrets exist and when they change; a referenced Secret
// is read by name when first needed, and only the values of the keys objects ask for are kept,
// until its resourceVersion moves or nothing references it any more: a Secret holding other
// material beside the key an object names leaves none of it in the operator's memory.
import type { Logger } from 'pino';
import { Informer, type InformerOptions, keyAt, keyOf } from './informer.ts';
import { isKubeNotFound, type Kube, type KubeObject } from './kube.ts';

const SECRETS = { group: '', version: 'v1', plural: 'secrets' };

/** What the cache keeps of a Secret: enough to know it exists and when it changed. */
function metadataOnly(o: KubeObject): KubeObject {
  const m = o.metadata;
  return {
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion },
  };
}

/**
 * A Secret's value at a key users name (base64), or undefined. Only the data's own keys: a key
 * named `constructor` or `__proto__` (valid Secret keys) would otherwise read the prototype's.
 */
export function secretValue(secret: KubeObject | undefined, key: string): string | undefined {
  const data = secret?.data as Record<string, unknown> | undefined;
  const v = data && Object.hasOwn(data, key) ? data[key] : undefined;
  return typeof v === 'string' ? v : undefined;
}

export class SecretStore {
  readonly informers: Informer[];
  private readonly kube: Kube;
  /** ns/name -> the values of a referenced Secret's keys asked for, at a resourceVersion. */
  private readonly data = new Map<string, { rv?: string; values: Map<string, string | undefined> }>();

  constructor(o: {
    kube: Kube;
    namespaces: (string | undefined)[];
    log: Logger;
    informer?: Partial<InformerOptions>;
  }) {
    this.kube = o.kube;
    this.informers = o.namespaces.map(
      (ns) =>
        new Informer({
          kube: o.kube,
          resource: SECRETS,
          namespace: ns,
          log: o.log.child({ informer: 'secrets' }),
          metadataOnly: true,
          transform: metadataOnly,
          ...o.informer,
        }),
    );
    for (const inf of this.informers)
      inf.on((type, obj) => {
        const key = keyOf(obj);
        if (type === 'delete' || this.data.get(key)?.rv !== obj.metadata.resourceVersion)
          this.data.delete(key);
      });
  }

  /** The Secret's metadata from the cache (existence and version), without data. */
  meta(namespace: string, name: string): KubeObject | undefined {
    for (const inf of this.informers) {
      const o = inf.get(keyAt(namespace, name));
      if (o) return o;
    }
    return undefined;
  }

  /**
   * A referenced Secret key's value (base64, as the API gives it): undefined when the Secret has
   * no such key, null when the Secret does not exist.
   */
  async value(namespace: string, name: string, key: string): Promise<string | undefined | null> {
    const meta = this.meta(namespace, name);
    if (!meta) return null;
    const at = keyAt(namespace, name);
    const cached = this.data.get(at);
    if (cached && cached.rv === meta.metadata.resourceVersion && cached.values.has(key))
      return cached.values.get(key);
    let secret: KubeObject;
    try {
      secret = await this.kube.get(SECRETS, namespace, name);
    } catch (err) {
      if (isKubeNotFound(err)) return null;
      throw err;
    }
    // the keys asked for before (by a read that ended meanwhile too), at this version, and this one
    const values = new Map<string, string | undefined>();
    for (const k of [...(this.data.get(at)?.values.keys() ?? []), key]) values.set(k, secretValue(secret, k));
    this.data.set(at, { rv: secret.metadata.resourceVersion, values });
    return values.get(key);
  }

  /** Drops the data of a Secret nothing references any more. */
  drop(namespace: string, name: string): void {
    this.data.delete(keyAt(namespace, name));
  }

  get cachedData(): number {
    return this.data.size;
  }
}
