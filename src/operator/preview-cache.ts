// What `edgectl plan` reads the engine's decisions against, read-only: the objects listed from
// the cluster with the files' objects over them (the cluster as it would be after the apply),
// as the engine's cache (EngineCache) and Secret reader (EngineSecrets). Kubernetes is only
// read (GET), with the caller's own rights.
import { crdFor } from './kinds/crd.ts';
import type { AnyBinding } from './runtime/bindings/binding.ts';
import { managedResource } from './runtime/constants.ts';
import type { EngineCache, EngineSecrets } from './runtime/engine/index.ts';
import { isKubeNotFound, type Kube, KubeError, type KubeObject } from './runtime/kube/kube.ts';
import { secretValue } from './runtime/kube/secrets.ts';

export const SECRETS = { group: '', version: 'v1', plural: 'secrets' };
export const keyIn = (kind: string, namespace: string | undefined, name: string) =>
  `${kind}/${namespace ?? ''}/${name}`;
export const keyOfObject = (o: KubeObject) => keyIn(o.kind ?? '', o.metadata.namespace, o.metadata.name);

interface Named {
  kind: string;
  namespace: string;
  name: string;
}

/** A read the caller's Kubernetes rights do not allow: the preview cannot say what the operator would. */
export class PreviewForbidden extends Error {}

type Schema = { type?: string; default?: unknown; properties?: Record<string, Schema>; items?: Schema };

/** The CRD schema's defaults applied to a value, as the API server applies them at admission. */
export function withDefaults(schema: Schema | undefined, value: unknown): unknown {
  if (!schema) return value;
  if (Array.isArray(value)) return value.map((v) => withDefaults(schema.items, v));
  if (!value || typeof value !== 'object' || !schema.properties) return value;
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const [k, s] of Object.entries(schema.properties)) {
    if (out[k] === undefined && s.default !== undefined) out[k] = structuredClone(s.default);
    if (out[k] !== undefined) out[k] = withDefaults(s, out[k]);
  }
  return out;
}

const specSchemas = new Map<string, Schema>();
/** A kind's spec schema, as its CRD has it (derived once from the binding). */
function specSchemaOf(b: AnyBinding): Schema | undefined {
  if (!specSchemas.has(b.kind)) {
    const crd = crdFor(b) as {
      spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: Schema } } } }[] };
    };
    specSchemas.set(b.kind, crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec);
  }
  return specSchemas.get(b.kind);
}

/**
 * The object as the apply would leave it: the live one's metadata (uid, status, finalizers,
 * deletion) with the file's annotations and labels over its own and the file's spec, defaulted as
 * the API server does; a new one with a uid to be assigned and no status.
 */
export function afterApply(b: AnyBinding, file: KubeObject, live: KubeObject | undefined): KubeObject {
  const spec = withDefaults(specSchemaOf(b), file.spec ?? {}) as Record<string, unknown>;
  const m = file.metadata;
  if (!live)
    return {
      apiVersion: file.apiVersion,
      kind: b.kind,
      metadata: {
        ...m,
        uid: `<uid of ${b.kind}/${m.namespace}/${m.name}>`,
        generation: 1,
        creationTimestamp: new Date().toISOString(),
      },
      spec,
    };
  const same = JSON.stringify(spec) === JSON.stringify(live.spec ?? {});
  return {
    ...live,
    metadata: {
      ...live.metadata,
      annotations: { ...live.metadata.annotations, ...m.annotations },
      labels: { ...live.metadata.labels, ...m.labels },
      generation: (live.metadata.generation ?? 1) + (same ? 0 : 1),
    },
    spec,
  };
}

/**
 * The managed objects of the cluster after the apply, by kind: the live ones, the files' over
 * them. Objects of the files that have no id yet show those that reference them the id the apply
 * would give them (`granted`): a placeholder for a create, the adopted id for an adoption.
 */
export class Overlay {
  private readonly byKind = new Map<string, Map<string, KubeObject>>();
  /** Remote id -> the live objects whose status holds it. */
  private readonly ids = new Map<string, Named[]>();
  /** Objects (keyIn) without an id yet -> the id their referrers see: a create's placeholder, an adopted id. */
  readonly granted = new Map<string, string>();
  readonly bindings: AnyBinding[];
  private readonly kube: Pick<Kube, 'get'>;
  private readonly shared: string[];

  constructor(o: {
    bindings: AnyBinding[];
    live: Map<string, KubeObject[]>;
    planned: KubeObject[];
    kube: Pick<Kube, 'get'>;
    sharedNamespaces: string[];
  }) {
    this.bindings = o.bindings;
    this.kube = o.kube;
    this.shared = o.sharedNamespaces;
    for (const [kind, objs] of o.live) for (const x of objs) this.put(kind, x);
    for (const x of o.planned) this.put(x.kind!, x);
    for (const [kind, objs] of this.byKind)
      for (const x of objs.values()) {
        const id = (x.status as { id?: string } | undefined)?.id;
        const ns = x.metadata.namespace ?? '';
        if (id)
          this.ids.set(id, [...(this.ids.get(id) ?? []), { kind, namespace: ns, name: x.metadata.name }]);
      }
  }

  private put(kind: string, x: KubeObject) {
    const m = this.byKind.get(kind) ?? new Map<string, KubeObject>();
    this.byKind.set(kind, m.set(`${x.metadata.namespace}/${x.metadata.name}`, x));
  }

  /** The object as it would be, without a placeholder id. */
  get(kind: string, namespace: string, name: string): KubeObject | undefined {
    return this.byKind.get(kind)?.get(`${namespace}/${name}`);
  }

  /** The object as those referencing it see it: with the id the apply would give it. */
  lookup = (kind: string, namespace: string, name: string): KubeObject | undefined => {
    const o = this.get(kind, namespace, name);
    const id = o && this.granted.get(keyIn(kind, namespace, name));
    return id ? { ...o, status: { ...o.status, id } } : o;
  };

  list(kind: string): KubeObject[] {
    return [...(this.byKind.get(kind)?.values() ?? [])];
  }

  managerOf = (id: string): Named | undefined => this.ids.get(id)?.[0];

  managedElsewhere = (id: string, ns: string): Named | undefined =>
    this.ids.get(id)?.find((o) => o.namespace !== ns && !this.shared.includes(o.namespace));

  /** The objects of the namespace that reference this one ("Kind name"), for a delete. */
  referrersOf = (kind: string, namespace: string, name: string): string[] => {
    const out: string[] = [];
    for (const b of this.bindings)
      for (const o of this.list(b.kind))
        if (
          o.metadata.namespace === namespace &&
          !o.metadata.deletionTimestamp &&
          (b.references?.(o.spec ?? {}) ?? []).some((r) => r.kind === kind && r.name === name)
        )
          out.push(`${b.kind} ${o.metadata.name}`);
    return out.sort();
  };

  /** As the operator's cache says it (runtime/cache.ts), reading with the caller's rights. */
  ownerState = async (object: string, uid: string, asking: string): Promise<'live' | 'gone' | 'unknown'> => {
    const [kind, ns, name] = object.split('/');
    const b = this.bindings.find((x) => x.kind === kind);
    if (!b || !ns || !name) return 'unknown';
    const anyOfName = ns === asking || this.shared.includes(ns);
    const owns = (o: KubeObject) => (anyOfName || o.metadata.uid === uid ? 'live' : 'gone');
    const known = this.get(b.kind, ns, name);
    if (known) return owns(known);
    try {
      return owns(await this.kube.get(managedResource(b.plural), ns, name));
    } catch (err) {
      return isKubeNotFound(err) ? 'gone' : 'unknown';
    }
  };

  /** One kind's view, as the engine reads its cache. */
  view(kind: string): EngineCache {
    return {
      get: (key) => this.byKind.get(kind)?.get(key),
      lookup: this.lookup,
      list: () => this.list(kind),
      changes: () => undefined,
      referencesOf: (k, spec) => this.bindings.find((b) => b.kind === k)?.references?.(spec),
      referrersOf: this.referrersOf,
      managerOf: this.managerOf,
      managedElsewhere: this.managedElsewhere,
      nameIds: (text) => text,
      ownerState: this.ownerState,
    };
  }
}

/** A Secret's data as the API server would hold it: `data` (base64) with `stringData` over it. */
export function secretData(s: KubeObject): Record<string, string> {
  const data = { ...((s.data ?? {}) as Record<string, string>) };
  for (const [k, v] of Object.entries((s.stringData ?? {}) as Record<string, string>))
    data[k] = Buffer.from(String(v)).toString('base64');
  return data;
}

/**
 * Secrets: the files' first, else read from the cluster with the caller's rights (once each).
 * One the caller may not read is PreviewForbidden: what the operator would send is unknown.
 */
export class PreviewSecrets implements EngineSecrets {
  private readonly read = new Map<string, Promise<KubeObject | undefined>>();
  private readonly kube: Pick<Kube, 'get'>;
  private readonly files: Map<string, KubeObject>;

  constructor(kube: Pick<Kube, 'get'>, files: KubeObject[]) {
    this.kube = kube;
    this.files = new Map(files.map((s) => [`${s.metadata.namespace}/${s.metadata.name}`, s]));
  }

  /** The Secret, undefined when there is none; PreviewForbidden when the caller may not read it. */
  secret(namespace: string, name: string): Promise<KubeObject | undefined> {
    const k = `${namespace}/${name}`;
    const file = this.files.get(k);
    if (file) return Promise.resolve({ ...file, data: secretData(file) });
    let p = this.read.get(k);
    if (!p) {
      p = this.kube.get(SECRETS, namespace, name).catch((err) => {
        if (isKubeNotFound(err)) return undefined;
        if (err instanceof KubeError && err.status === 403)
          throw new PreviewForbidden(`Secret ${namespace}/${name}: you may not read it (${err.message})`);
        throw err;
      });
      this.read.set(k, p);
    }
    return p;
  }

  async value(namespace: string, name: string, key: string): Promise<string | undefined | null> {
    const s = await this.secret(namespace, name);
    return s ? secretValue(s, key) : null;
  }
}
