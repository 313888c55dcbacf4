// An in-memory stand-in for the few Kubernetes API server behaviours the engine relies on,
// so engine cases run in the unit suite without a control plane: merge patches (RFC 7386),
// the status subresource, resourceVersion preconditions (409), generation bumped by spec
// changes only, and deletion that waits for finalizers. Events are kept for assertions.
import { randomUUID } from 'node:crypto';
import { KubeError, type KubeObject, type ResourcePath } from '../../src/operator/runtime/kube/kube.ts';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const out: Json = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

export interface RecordedEvent {
  object: string;
  type: string;
  reason: string;
  message: string;
}

export class FakeKube {
  private readonly objects = new Map<string, KubeObject>();
  private rv = 1;
  readonly events: RecordedEvent[] = [];
  /** Writes to managed objects (metadata and status patches), as the benchmark counts them. */
  writes = 0;

  private key(plural: string, namespace: string | undefined, name: string) {
    return `${plural}/${namespace ?? ''}/${name}`;
  }

  /** A user's `kubectl apply` of a new object. */
  add(plural: string, obj: KubeObject): KubeObject {
    const stored: KubeObject = structuredClone({
      ...obj,
      metadata: {
        ...obj.metadata,
        uid: obj.metadata.uid ?? randomUUID(),
        generation: 1,
        resourceVersion: String(++this.rv),
        creationTimestamp: new Date().toISOString(),
      },
    });
    this.objects.set(this.key(plural, obj.metadata.namespace, obj.metadata.name), stored);
    return structuredClone(stored);
  }

  /** Every stored object of a kind (copies), as an informer's cache lists them. */
  all(plural: string): KubeObject[] {
    return [...this.objects].filter(([k]) => k.startsWith(`${plural}/`)).map(([, o]) => structuredClone(o));
  }

  /** The stored object (a copy), as an informer's cache would hold it. */
  get(plural: string, namespace: string, name: string): KubeObject | undefined {
    const o = this.objects.get(this.key(plural, namespace, name));
    return o && structuredClone(o);
  }

  /** A user's spec edit (a merge patch of spec). */
  editSpec(plural: string, namespace: string, name: string, spec: Json): KubeObject {
    return this.write(plural, namespace, name, { spec });
  }

  /** `kubectl delete`: gone at once without finalizers, else marked. */
  delete(plural: string, namespace: string, name: string): void {
    const k = this.key(plural, namespace, name);
    const o = this.objects.get(k);
    if (!o) throw new KubeError(404, `${k} not found`, 'NotFound');
    if (!o.metadata.finalizers?.length) this.objects.delete(k);
    else {
      o.metadata.deletionTimestamp ??= new Date().toISOString();
      o.metadata.resourceVersion = String(++this.rv);
    }
  }

  async patch<T = KubeObject>(
    r: ResourcePath,
    namespace: string | undefined,
    name: string,
    body: unknown,
    type = 'merge',
    sub?: string,
  ): Promise<T> {
    if (type !== 'merge') throw new Error(`FakeKube: ${type} patches are not modelled`);
    this.writes++;
    return this.write(r.plural, namespace, name, body as Json, sub) as T;
  }

  async create<T = KubeObject>(r: ResourcePath, _namespace: string | undefined, body: unknown): Promise<T> {
    if (r.plural !== 'events') throw new Error(`FakeKube: creating ${r.plural} is not modelled`);
    const e = body as {
      involvedObject: { kind?: string; name: string };
      type: string;
      reason: string;
      message: string;
    };
    this.events.push({
      object: `${e.involvedObject.kind}/${e.involvedObject.name}`,
      type: e.type,
      reason: e.reason,
      message: e.message,
    });
    return body as T;
  }

  private write(plural: string, namespace: string | undefined, name: string, body: Json, sub?: string) {
    const k = this.key(plural, namespace, name);
    const o = this.objects.get(k);
    if (!o) throw new KubeError(404, `${k} not found`, 'NotFound');
    const meta = (body.metadata ?? {}) as Json;
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== o.metadata.resourceVersion)
      throw new KubeError(409, `${k}: the object has been modified`, 'Conflict');
    let next: KubeObject;
    if (sub === 'status') {
      next = { ...o, status: applyMergePatch(o.status, body.status) as Json };
    } else {
      const { resourceVersion: _, ...metaPatch } = meta;
      next = {
        ...o,
        metadata: applyMergePatch(o.metadata, metaPatch) as KubeObject['metadata'],
        spec: body.spec === undefined ? o.spec : (applyMergePatch(o.spec, body.spec) as Json),
      };
      if (JSON.stringify(next.spec) !== JSON.stringify(o.spec))
        next.metadata.generation = (o.metadata.generation ?? 1) + 1;
    }
    next.metadata.resourceVersion = String(++this.rv);
    if (next.metadata.deletionTimestamp && !next.metadata.finalizers?.length) this.objects.delete(k);
    else this.objects.set(k, next);
    return structuredClone(next);
  }
}
