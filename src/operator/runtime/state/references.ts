// The reverse index of references: which objects (and of which kind) reference an object or
// a Secret, so a change to it re-queues them and a delete waits while they use it.

import type { AnyBinding } from '../bindings/binding.ts';
import { DEFAULT_ACCOUNT_NAME } from '../constants.ts';
import type { KubeObject } from '../kube/kube.ts';
import { type Holders, holdersOf, withHolder, withoutHolder } from './holders.ts';

/** An object by kind, namespace and name: `Kind/namespace/name`. */
export const refOf = (kind: string, namespace: string | undefined, name: string) =>
  `${kind}/${namespace ?? ''}/${name}`;

/**
 * The account an object names, or would use by default (its namespace's EdgeAccount named
 * default): it is re-queued when that account turns Ready, and the account is held while it is used.
 */
export function accountRefOf(obj: KubeObject): string {
  const ns = obj.metadata.namespace ?? '';
  const ref = (obj.spec as { accountRef?: { kind: string; name: string } } | undefined)?.accountRef;
  if (ref?.kind === 'ClusterEdgeAccount') return refOf('ClusterEdgeAccount', '', ref.name);
  return refOf('EdgeAccount', ns, ref?.name ?? DEFAULT_ACCOUNT_NAME);
}

/** Whether a reference names an account (not a managed object or a Secret). */
export const isAccountRef = (ref: string) =>
  ref.startsWith('EdgeAccount/') || ref.startsWith('ClusterEdgeAccount/');

/** What an object references (`Kind/ns/name`, Secrets as `Secret/ns/name`, its account). */
export function referencesOf(binding: AnyBinding, obj: KubeObject): string[] {
  const ns = obj.metadata.namespace ?? '';
  const spec = obj.spec ?? {};
  return [
    ...(binding.references?.(spec) ?? []).map((r) => refOf(r.kind, ns, r.name)),
    ...(binding.secrets?.(spec) ?? []).map((s) => refOf('Secret', ns, s.name)),
    accountRefOf(obj),
  ];
}

interface KindIndex {
  /** A referenced object -> keys of this kind's objects that reference it. */
  dependents: Map<string, Holders>;
  /** An object's key -> what it references (the one reference itself when it has one: its account). */
  refsOf: Map<string, string | string[]>;
}

const asList = (r: string | string[] | undefined): string[] =>
  r === undefined ? [] : typeof r === 'string' ? [r] : r;

export class References {
  /** Per referring kind, in the order the kinds were added. */
  private readonly kinds = new Map<string, KindIndex>();

  private index(kind: string): KindIndex {
    let i = this.kinds.get(kind);
    if (!i) {
      i = { dependents: new Map(), refsOf: new Map() };
      this.kinds.set(kind, i);
    }
    return i;
  }

  /** Adds a referring kind (its place in the order of dependents). */
  addKind(kind: string): void {
    this.index(kind);
  }

  /**
   * One instance of each referenced key: the objects of a namespace all name its account, and
   * a copy of the name per object costs more than the reference itself.
   */
  private readonly names = new Map<string, string>();

  /** Replaces what an object of `kind` references; returns what it referenced before. */
  set(kind: string, key: string, refs: string[]): string[] {
    const i = this.index(kind);
    const before = asList(i.refsOf.get(key));
    for (const r of before) {
      const left = withoutHolder(i.dependents.get(r), key);
      if (left !== undefined) i.dependents.set(r, left);
      else if (i.dependents.delete(r) && !this.referenced(r)) this.names.delete(r);
    }
    refs = refs.map((r) => {
      const held = this.names.get(r);
      if (held !== undefined) return held;
      this.names.set(r, r);
      return r;
    });
    i.refsOf.set(key, refs.length === 1 ? refs[0]! : refs);
    for (const r of refs) i.dependents.set(r, withHolder(i.dependents.get(r), key));
    return before;
  }

  /** Forgets an object that is gone (its references were set to none). */
  remove(kind: string, key: string): void {
    this.kinds.get(kind)?.refsOf.delete(key);
  }

  /** Whether any object references `ref`. */
  referenced(ref: string): boolean {
    return [...this.kinds.values()].some((i) => i.dependents.has(ref));
  }

  /** Every object that references `ref`: its kind and key. */
  dependentsOf(ref: string): { kind: string; key: string }[] {
    // loops, not spreads: this runs for every object created and every id recorded
    const out: { kind: string; key: string }[] = [];
    for (const [kind, i] of this.kinds) {
      for (const key of holdersOf(i.dependents.get(ref))) out.push({ kind, key });
    }
    return out;
  }

  /** "Kind name" of every object that references `ref`, sorted. */
  referrersOf(ref: string): string[] {
    return this.dependentsOf(ref)
      .map((d) => `${d.kind} ${d.key.split('/')[1]}`)
      .sort();
  }
}
